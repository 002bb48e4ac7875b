"""Lines and zones drawn with the mouse on live pictures (QTest's real mouse events on the
view), counted with app.analytics as the command line counts them, listed in the Events panel
and exported; remembered per source across a restart of the viewer; round-tripped through
the zones file `infer --zones` reads; the heat map overlay and its PNG. Real server, real
face video (tests/media.make_crossing_video)."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtTest import QTest

from app.analytics.zones_file import ZonesConfig, ZoneSpec, load_zones
from app.pipeline.live import LiveState
from app.server.embedded import EmbeddedServer
from app.ui.view.image_view import ImageView
from app.ui.viewer import Viewer
from tests.cli_runner import run_cli_in_process
from tests.media import back_and_forth, make_crossing_video
from tests.ui.viewer_fixtures import Harness, until

pytestmark = [pytest.mark.gui, pytest.mark.slow]
SIZE = (640, 480)
LINE_X = 320


def at(view: ImageView, x: float, y: float) -> QPoint:
    """Viewport pixels of the source pixel (x, y)."""
    return view.mapFromScene(QPointF(x, y))


def near(p: tuple[float, float], q: tuple[float, float], tolerance: float = 2.0) -> bool:
    return abs(p[0] - q[0]) <= tolerance and abs(p[1] - q[1]) <= tolerance


def draw_line(view: ImageView, a: tuple[float, float], b: tuple[float, float]) -> None:
    """Press at a, drag (in steps) to b, release: as a user draws one."""
    viewport = view.viewport()
    QTest.mousePress(viewport, Qt.MouseButton.LeftButton, pos=at(view, *a))
    for k in range(1, 6):
        x, y = a[0] + (b[0] - a[0]) * k / 5, a[1] + (b[1] - a[1]) * k / 5
        QTest.mouseMove(viewport, at(view, x, y))
    QTest.mouseRelease(viewport, Qt.MouseButton.LeftButton, pos=at(view, *b))


def draw_zone(view: ImageView, corners: list[tuple[float, float]]) -> None:
    """A click per corner, then a double-click on the last one closes it."""
    viewport = view.viewport()
    for corner in corners[:-1]:
        QTest.mouseClick(viewport, Qt.MouseButton.LeftButton, pos=at(view, *corner))
    QTest.mouseDClick(viewport, Qt.MouseButton.LeftButton, pos=at(view, *corners[-1]))


def crossing_video(folder: Path) -> tuple[Path, list[float]]:
    xs = back_and_forth((150, 490), speed=6, hold=15)  # one passage, left to right
    video = folder / "crossing.avi"
    make_crossing_video(video, xs, fps=30, size=SIZE)
    return video, xs


def first_frame_paused(harness: Harness, viewer: Viewer, video: Path) -> None:
    """The video opened frame by frame (every frame counted, one request at a time: in order),
    paused on its first frames so that the user can draw."""
    bar = viewer.live_ui.toolbar
    bar.frame_by_frame.setChecked(True)
    bar.in_flight.setValue(1)
    viewer.live_ui.open_source(str(video))
    harness.run(until(lambda: viewer.live.meter.shown >= 1, what="the first frame"))
    viewer.live.pause()
    harness.run(until(lambda: viewer.live.state is LiveState.PAUSED))


def test_a_line_drawn_with_the_mouse_counts_the_crossing_in_the_events_panel_and_its_exports(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    video, _xs = crossing_video(tmp_path)
    viewer = harness.viewer(triton.grpc_url, "face_detector")
    harness.connected(viewer)
    first_frame_paused(harness, viewer, video)
    view, zones = viewer.window.view, viewer.zones.single
    zones.editor.start_line()  # (its entry in the picture's context menu)
    draw_line(view, (LINE_X, 20), (LINE_X, 460))
    (line,) = zones.config.lines  # where the mouse went, to within a screen pixel
    assert line.name == "line 1" and near(line.a, (LINE_X, 20)) and near(line.b, (LINE_X, 460)), line
    # Counting needs track ids: drawing the line switched tracking on.
    assert viewer.analysis.track_action.isChecked()
    harness.run(until(lambda: (lib := viewer.analysis.tracking.library) is not None and lib.done()))
    viewer.live.start()  # resume: the face walks across the line
    harness.run(until(lambda: viewer.live.state is LiveState.ENDED and viewer.live.idle, what="the end"))
    panel = viewer.zones.panel
    events = panel.shown_events()
    assert [(e.kind, e.name, e.direction, e.track_id) for e in events] == [
        ("line_crossed", "line 1", "in", 1)
    ], events
    assert viewer.zones.dock.isVisible(), "the Events panel shows once there is an event"
    assert panel.model.rowCount() == 1 and panel.model.shown[0].texts()[1:] == (
        "crossing.avi",
        "line 1",
        "crossed in",
        "1",
        "face",
    )
    assert zones.item.snapshot is not None and zones.item.snapshot.lines == {"line 1": (1, 0)}
    # The command line counts the same crossing on the same frame with the same line.
    zones_file = tmp_path / "line.json"
    zones_file.write_text(json.dumps(zones.config.to_dict()))
    done = run_cli_in_process(
        "infer", "--url", triton.grpc_url, "--track", "--zones", str(zones_file), str(video)
    )
    assert done.returncode == 0, done.stderr[-2000:]
    cli = [json.loads(line) for line in done.stdout.splitlines() if '"event"' in line]
    assert [(r["event"], r["line"], r["direction"], r["frame"]) for r in cli] == [
        (e.kind.value, e.name, e.direction, e.frame) for e in events
    ]
    # The exports hold the events listed, with the command line's record fields.
    jsonl, table = tmp_path / "events.jsonl", tmp_path / "events.csv"
    harness.run(panel.export(str(jsonl)))
    harness.run(panel.export(str(table)))
    records = [json.loads(line) for line in jsonl.read_text().splitlines()]
    assert records == [e.to_record() for e in events]
    assert set(records[0]) == set(cli[0]) and records[0]["source"] == str(video)
    with table.open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert [(r["event"], r["line"], r["direction"], r["track_id"], r["frame"]) for r in rows] == [
        ("line_crossed", "line 1", "in", "1", str(events[0].frame))
    ]


def test_zones_survive_a_restart_and_round_trip_the_zones_file(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    video, _xs = crossing_video(tmp_path)
    viewer = harness.viewer(triton.grpc_url, "face_detector")
    harness.connected(viewer)
    first_frame_paused(harness, viewer, video)
    view, zones = viewer.window.view, viewer.zones.single
    zones.editor.start_zone()
    draw_zone(view, [(400, 40), (620, 40), (620, 440), (400, 440)])
    zones.editor.start_line()
    draw_line(view, (LINE_X, 20), (LINE_X, 460))
    assert [z.name for z in zones.config.zones] == ["zone 1"] and len(zones.config.zones[0].polygon) == 4
    # Drag a vertex: the zone's top-left corner moves.
    viewport = view.viewport()
    QTest.mousePress(viewport, Qt.MouseButton.LeftButton, pos=at(view, 400, 40))
    QTest.mouseMove(viewport, at(view, 380, 60))
    QTest.mouseRelease(viewport, Qt.MouseButton.LeftButton, pos=at(view, 380, 60))
    corner = zones.config.zones[0].polygon[0]
    assert abs(corner[0] - 380) <= 2 and abs(corner[1] - 60) <= 2, corner
    # Rename (the context menu's entry asks for the name), delete the line.
    menu = zones.editor.build_menu(at(view, 500, 240))
    texts = [a.text() for a in menu.actions()]
    assert "Rename zone 'zone 1'…" in texts and "Delete zone 'zone 1'" in texts, texts
    menu.deleteLater()
    zones.editor.rename("zone", 0, "queue")
    with pytest.raises(ValueError):
        zones.editor.rename("zone", 0, "  ")
    zones.editor.delete("line", 0)
    zones.editor.start_line()
    draw_line(view, (100, 460), (100, 20))
    config = zones.config
    assert [z.name for z in config.zones] == ["queue"] and [line.name for line in config.lines] == ["line 1"]
    harness.close(viewer)

    # A new viewer (same settings) opening the same video finds them.
    again = harness.viewer(triton.grpc_url, "face_detector")
    harness.connected(again)
    again.live_ui.open_source(str(video))
    harness.run(until(lambda: again.live.meter.shown >= 1, what="the first frame"))
    assert again.zones.single.config == config
    # Exported as the zones file (in the source's pixels, with its size) and read back as such.
    path = tmp_path / "zones.json"
    harness.run(again.zones.single.export_zones(str(path)))
    assert load_zones(path) == ZonesConfig(config.lines, config.zones, SIZE)
    data: dict[str, Any] = json.loads(path.read_text())
    assert data["zones"][0]["name"] == "queue" and len(data["zones"][0]["polygon"]) == 4
    # Imported: replaces them, remembered for the source.
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"zones": [{"name": "left", "polygon": [[0, 0], [200, 0], [200, 480]]}]}))
    harness.run(again.zones.single.import_zones(str(other)))
    expected = ZonesConfig((), (ZoneSpec("left", ((0.0, 0.0), (200.0, 0.0), (200.0, 480.0))),))
    assert again.zones.single.config == expected
    assert again.settings.zones(str(video.resolve())) == expected
    # A bad file is refused with its reason, nothing changed.
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"lines": [{"name": "x", "a": [1, 1], "b": [1, 1]}]}))
    harness.run(again.zones.single.import_zones(str(bad)))
    assert again.zones.single.config == expected
    assert "zero length" in again.window.banner.text()


def test_a_wall_tile_counts_zone_visits_and_shows_its_heat_map(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    video, _xs = crossing_video(tmp_path)
    viewer = harness.viewer(triton.grpc_url, "face_detector")
    harness.connected(viewer)
    viewer.analysis.set_tracking(True)
    viewer.live_ui.toolbar.loop.setChecked(True)
    streams = [viewer.wall_ui.add_source(str(video)) for _ in range(2)]
    assert all(s is not None and s.zones is not None for s in streams)
    tile = streams[1]
    assert tile is not None and tile.zones is not None
    harness.run(until(lambda: tile.controller.meter.shown >= 3, what="the tile plays"))
    tile.zones.set_config(
        ZonesConfig(zones=(ZoneSpec("right", ((400, 0), (640, 0), (640, 480), (400, 480))),))
    )
    harness.run(until(lambda: any(e.kind == "zone_entered" for e in tile.zones.events), timeout=90))
    snapshot = tile.zones.analytics.snapshot() if tile.zones.analytics is not None else None
    assert snapshot is not None and snapshot.zones["right"][1] >= 1, snapshot
    panel = viewer.zones.panel
    assert {row.stream for row in panel.model.rows} == {tile.label}
    panel.kinds.setCurrentIndex(panel.kinds.findData("zone_entered"))
    assert panel.shown_events() and all(e.kind == "zone_entered" for e in panel.shown_events())
    panel.streams.setCurrentIndex(panel.streams.findData(tile.label))
    assert panel.shown_events()
    # The heat map overlay over the tile's picture, and its PNG at the source's size.
    tile.zones.show_heat(True)
    assert tile.zones.heat_item.isVisible() and not tile.zones.heat_item.pixmap().isNull()
    assert tile.zones.heat_item.scene() is tile.tile.view.scene()
    png = tmp_path / "heat.png"
    harness.run(tile.zones.export_heat(str(png)))
    heat = cv2.imread(str(png))
    assert heat is not None and heat.shape[:2] == (SIZE[1], SIZE[0])
    hsv = cv2.cvtColor(heat, cv2.COLOR_BGR2HSV)
    assert np.count_nonzero(hsv[..., 1] > 150) > 1000, "coloured where the face went"
    # Focused: its zones and heat map come along to the single view, and go back.
    viewer.wall.focus(tile)
    assert tile.zones.item.scene() is viewer.window.view.scene()
    assert viewer.zones.single.item.scene() is None, "one editor on the single view at a time"
    # The Tracks panel lists the focused stream's tracks.
    assert tile.tracking.tracker is not None
    assert viewer.analysis.tracks_panel.table.rowCount() == len(tile.tracking.tracker.book.tracks) >= 1
    viewer.wall.unfocus()
    assert tile.zones.item.scene() is tile.tile.view.scene()
    assert viewer.zones.single.item.scene() is viewer.window.view.scene()


def test_a_batchs_images_get_no_zones_of_the_live_stream(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    video, _xs = crossing_video(tmp_path)
    viewer = harness.viewer(triton.grpc_url, "face_detector")
    harness.connected(viewer)
    zones = viewer.zones.single
    viewer.live_ui.open_source(str(video))
    harness.run(until(lambda: viewer.live.meter.shown >= 1, what="the first frame"))
    zones.set_config(ZonesConfig(zones=(ZoneSpec("right", ((400, 0), (640, 0), (640, 480))),)))
    assert zones.editor.active and zones.item.isVisible()
    picture = tmp_path / "photos"
    picture.mkdir()
    cv2.imwrite(str(picture / "a.png"), np.full((240, 320, 3), 128, np.uint8))
    viewer.open_paths([str(picture)])  # the batch takes the view: the stream stops
    harness.run(until(lambda: viewer.state.mode == "batch" and viewer.gallery.current_image is not None))
    assert not zones.editor.active and not zones.item.isVisible(), "no zone drawn over a batch's image"
    # The live stream again: its zones with it.
    viewer.live_ui.open_source(str(video))
    harness.run(until(lambda: viewer.state.mode == "live" and viewer.live.meter.shown >= 1))
    assert zones.editor.active and zones.item.isVisible() and zones.config.zones[0].name == "right"
