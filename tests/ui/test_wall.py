"""The wall of streams in the whole window, against the real server: several looped video files
at once through the same capture path a camera uses (LiveCapture), each in a tile with its
own LiveController; a stream that fails stays in its tile; double-click focuses, Esc returns;
closing with every stream in flight ends within the shutdown bound."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtTest import QTest

from app.pipeline.live import LiveState
from app.server.embedded import EmbeddedServer
from app.ui.analysis.request_log import COL_SOURCE
from app.ui.live.recording import RecordingState
from app.ui.state.viewer_state import Mode
from app.ui.viewer import Viewer
from app.ui.wall.wall_stream import WallStream
from tests.media import make_face_video
from tests.ui.live_fixtures import live_threads
from tests.ui.viewer_fixtures import Harness, until

pytestmark = [pytest.mark.gui, pytest.mark.slow]
SIZE = (320, 240)
QUIT_WITHIN_S = 3.0  # the viewer's shutdown bound (tests/ui/test_shutdown_order.py)


def face_videos(folder: Path, count: int, frames: int = 45) -> list[Path]:
    videos = []
    for i in range(count):
        path = folder / f"face-{i}.avi"
        make_face_video(path, frames=frames, fps=30, size=SIZE)
        videos.append(path)
    return videos


def wall_of(harness: Harness, url: str, sources: list[str], loop: bool = True) -> Viewer:
    viewer = harness.viewer(url, "face_detector")
    harness.connected(viewer)
    viewer.live_ui.toolbar.loop.setChecked(loop)
    for source in sources:
        assert viewer.wall_ui.add_source(source) is not None
    return viewer


def boxes_seen(streams: list[WallStream]) -> dict[str, int]:
    """Per stream, the frames shown with at least one box drawn in its tile (counted as drawn)."""
    seen = {s.label: 0 for s in streams}
    for stream in streams:
        view = stream.tile.view

        def count(_index: int, _age: float, s: WallStream = stream, v: object = view) -> None:
            if s.view is v and s.view.box_items():
                seen[s.label] += 1

        stream.controller.frame_shown.connect(count)
    return seen


def test_four_looped_videos_play_at_once_each_with_boxes_in_its_own_tile(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    videos = face_videos(tmp_path, 4)
    viewer = wall_of(harness, triton.grpc_url, [str(v) for v in videos])
    wall = viewer.wall
    assert len(wall.streams) == 4 and wall.widget.shape() == (2, 2)
    assert viewer.state.mode is Mode.LIVE and viewer.window.pages.currentWidget() is wall.widget
    seen = boxes_seen(wall.streams)
    harness.run(until(lambda: all(n >= 10 for n in seen.values()), what="10 frames with boxes per tile"))
    # One run (and one in-flight window) per stream, every one on the viewer's session.
    runs = [s.controller.live for s in wall.streams]
    assert all(run is not None for run in runs) and len({id(r) for r in runs}) == 4
    assert all(s.controller.session is viewer.connection.session for s in wall.streams)
    # Each stream is decoded for its own tile (its plan told the tile's size, not the window's).
    for stream in wall.streams:
        need = stream.controller.decode_plan.view
        assert need is not None and need.viewport == stream.tile.view.viewport_pixels(), stream.label
        assert need.viewport[0] < viewer.window.view.width()
    # Per stream figures in its tile, the overall ones above the grid.
    wall.refresh()
    for stream in wall.streams:
        text = stream.tile.figures.text()
        assert "fps" in text and "dropped" in text and "ms" in text, text
    assert wall.widget.summary.text().startswith("4 streams (4 playing)"), wall.widget.summary.text()
    figures = wall.figures()
    assert figures.shown >= 40 and figures.display_fps > 0
    # Every stream's results reach the request log and the statistics (the live scope).
    viewer.router.flush_log()
    logged = {row[COL_SOURCE] for row in viewer.window.request_log.visible_rows()}
    assert {v.name for v in videos} <= {Path(s).name for s in logged}, logged


def test_a_stream_that_fails_stays_in_its_tile_and_the_others_play_on(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    videos = face_videos(tmp_path, 3)
    broken = tmp_path / "broken.avi"
    broken.write_bytes(b"RIFF" + b"\x00" * 4 + b"AVI garbage, not a video" * 40)
    viewer = wall_of(harness, triton.grpc_url, [str(v) for v in videos] + [str(broken)])
    wall = viewer.wall
    bad = wall.streams[3]
    good = wall.streams[:3]
    harness.run(until(lambda: bad.state is LiveState.FAILED, what="the broken file fails"))
    assert "broken.avi" in bad.tile.message_text() and not bad.tile.message.isHidden()
    assert viewer.window.banner.context() is None, "the failure is the tile's, not the window's"
    shown_then = [s.controller.meter.shown for s in good]
    harness.run(
        until(
            lambda: all(s.controller.meter.shown >= n + 15 for s, n in zip(good, shown_then, strict=True)),
            what="the three others go on",
        )
    )
    assert all(s.state is LiveState.PLAYING and s.tile.message_text() == "" for s in good)
    # A file that ends (no loop) says so in its tile; the others still play.
    viewer.live_ui.toolbar.loop.setChecked(False)
    short = tmp_path / "short.avi"
    make_face_video(short, frames=10, fps=30, size=SIZE)
    ending = viewer.wall_ui.add_source(str(short))
    assert ending is not None
    harness.run(until(lambda: ending.state is LiveState.ENDED, what="the short file ends"))
    assert ending.tile.message_text().startswith("Ended"), ending.tile.message_text()
    shown_then = [s.controller.meter.shown for s in good]
    harness.run(
        until(lambda: all(s.controller.meter.shown > n for s, n in zip(good, shown_then, strict=True)))
    )
    assert all(s.state is LiveState.PLAYING for s in good)
    assert len(wall.streams) == 5 and wall.widget.shape() == (2, 3)
    # Removing the failed and the ended ones: their tiles go, the three play on in a 2x2 grid.
    viewer.wall.remove(bad)
    viewer.wall.remove(ending)
    assert wall.streams == good and wall.widget.shape() == (2, 2)
    harness.run(until(lambda: wall.closing == 0, what="the removed streams released"))
    assert len([t for t in live_threads() if t.startswith("LiveCapture[")]) == 3
    assert all(s.state is LiveState.PLAYING for s in good)


def completed(stream: WallStream) -> int:
    stats = stream.controller.stream_stats()
    return stats.completed if stats is not None else 0


def test_double_click_focuses_a_tile_in_the_single_view_and_esc_goes_back(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    videos = face_videos(tmp_path, 4)
    viewer = wall_of(harness, triton.grpc_url, [str(v) for v in videos])
    wall, window = viewer.wall, viewer.window
    seen = boxes_seen(wall.streams)
    harness.run(until(lambda: all(n >= 3 for n in seen.values()), what="boxes in every tile"))
    target = wall.streams[2]
    viewport = target.tile.view.viewport()
    middle = QPoint(viewport.width() // 2, viewport.height() // 2)
    QTest.mouseDClick(viewport, Qt.MouseButton.LeftButton, pos=middle)
    assert wall.focused is target
    assert window.pages.currentWidget() is window.view and target.view is window.view
    assert viewer.wall_ui.back_action.isEnabled()
    # The single view shows the focused stream's frames and boxes, and its panels follow it.
    shown = target.controller.meter.shown
    harness.run(until(lambda: target.controller.meter.shown >= shown + 5 and bool(window.view.box_items())))
    window.detections_panel.refresh()
    assert window.detections_panel.table.rowCount() >= 1
    viewer.stats.poll()
    assert window.stats_panel.value_text("Display frames/s") != ""
    # The other streams play on while hidden: inferred, decoded for their model alone, not drawn.
    others = [s for s in wall.streams if s is not target]
    drawn = [s.controller.meter.shown for s in others]
    done = [completed(s) for s in others]
    harness.run(until(lambda: all(completed(s) > n + 3 for s, n in zip(others, done, strict=True))))
    assert all(s.controller.decode_plan.view is None for s in others)
    assert [s.controller.meter.shown for s in others] == drawn
    # Esc: back to the wall, the stream in its tile again.
    window.activateWindow()
    QTest.keyClick(window.view, Qt.Key.Key_Escape)
    assert wall.focused is None and window.pages.currentWidget() is wall.widget
    assert target.view is target.tile.view and not viewer.wall_ui.back_action.isEnabled()
    assert not window.view.has_image(), "nothing of the stream stays in the single view"
    shown = target.controller.meter.shown
    harness.run(
        until(lambda: target.controller.meter.shown >= shown + 3 and bool(target.tile.view.box_items()))
    )
    assert all(s.controller.decode_plan.view is not None for s in wall.streams)


def test_closing_with_four_streams_in_flight_ends_within_the_shutdown_bound(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    videos = face_videos(tmp_path, 4)
    viewer = wall_of(harness, triton.grpc_url, [str(v) for v in videos])
    wall = viewer.wall
    harness.run(until(lambda: all(s.controller.meter.shown >= 5 for s in wall.streams), what="all playing"))
    runs = [s.controller.live for s in wall.streams]
    harness.run(until(lambda: sum(run.in_flight() for run in runs if run is not None) > 0, what="in flight"))
    assert len([t for t in live_threads() if t.startswith("LiveCapture[")]) == 4
    started = time.monotonic()
    viewer.request_close()
    harness.run(viewer.closed.wait(), timeout=QUIT_WITHIN_S)
    elapsed = time.monotonic() - started
    print(f"closed in {elapsed:.2f} s")
    assert elapsed < QUIT_WITHIN_S
    assert live_threads() == [], "every capture thread has ended"
    assert wall.streams == [] and viewer.connection.session is None


def test_a_tile_runs_another_model_on_the_sessions_own_channels(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    videos = face_videos(tmp_path, 2)
    viewer = wall_of(harness, triton.grpc_url, [str(v) for v in videos])
    first, second = viewer.wall.streams
    models: dict[str, set[str | None]] = {first.label: set(), second.label: set()}
    for stream in (first, second):
        stream.controller.result.connect(lambda r, s=stream: models[s.label].add(r.model))
    combo = second.tile.model
    assert combo.itemData(0) is None and combo.itemText(0) == "face_detector"
    index = combo.findData("fixed_efficientnms")
    assert index > 0, [combo.itemText(i) for i in range(combo.count())]
    combo.setCurrentIndex(index)
    combo.activated.emit(index)  # as the user's choice in the tile's header
    harness.run(until(lambda: second.own_session is not None, what="the tile's own session"))
    own, base = second.own_session, viewer.connection.session
    assert own is not None and base is not None and own is not base
    assert own.pool is not None and base.pool is not None
    # No connection of its own: its channels are the viewer's session's.
    inner = {id(getattr(channel, "_inner", None)) for channel in own.pool.channels}
    assert inner <= {id(channel) for channel in base.pool.channels}
    models[second.label].clear()
    harness.run(until(lambda: "fixed_efficientnms" in models[second.label], what="the other model's results"))
    assert first.controller.session is base and "face_detector" in models[first.label]
    harness.run(until(lambda: len(second.tile.view.box_items()) == 2, what="the fixed model's two boxes"))
    # Back to the session's model: its own session is closed, the viewer's still open.
    combo.setCurrentIndex(0)
    combo.activated.emit(0)
    assert second.own_session is None and second.controller.session is base
    harness.run(until(lambda: own.state == "closed", what="the tile's session closed"))
    assert base.state == "open"


def test_adding_a_camera_to_a_single_stream_makes_a_wall_and_opening_one_closes_it(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    first, second, third = face_videos(tmp_path, 3)
    viewer = wall_of(harness, triton.grpc_url, [])
    viewer.live_ui.open_source(str(first))  # the single live view
    harness.run(until(lambda: viewer.live.meter.shown >= 3, what="the single stream"))
    added = viewer.wall_ui.add_source(str(second))
    assert added is not None
    wall = viewer.wall
    assert [s.source for s in wall.streams] == [str(first), str(second)], "the single stream moved in"
    harness.run(until(lambda: viewer.live.idle and viewer.live.source is None, what="the single view let go"))
    harness.run(until(lambda: all(s.controller.meter.shown >= 3 for s in wall.streams), what="both tiles"))
    assert viewer.window.pages.currentWidget() is wall.widget
    assert viewer.live_ui.toolbar.state_label.text().startswith(" Wall: 2 streams")
    # A single stream opened (Live > Open video…) takes the live view: the wall closes.
    viewer.live_ui.open_source(str(third))
    harness.run(until(lambda: viewer.live.meter.shown >= 3, what="the new single stream"))
    assert wall.streams == [] and viewer.window.pages.currentWidget() is viewer.window.view
    harness.run(
        until(lambda: wall.closing == 0 and len(live_threads()) == 1, what="the wall's captures released")
    )


def tile_action(viewer: Viewer, stream: WallStream, text: str) -> None:
    """Choose `text` in the stream's tile menu (built as a right-click builds it)."""
    menu = viewer.wall_ui.build_tile_menu(stream, QPoint(5, 5))
    texts = [a.text() for a in menu.actions()]
    assert text in texts, texts
    next(a for a in menu.actions() if a.text() == text).trigger()
    menu.deleteLater()


def test_a_tiles_own_pause_stop_tracking_and_recording_leave_the_other_tile_playing(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    import cv2

    viewer = wall_of(harness, triton.grpc_url, [str(v) for v in face_videos(tmp_path, 2)])
    a, b = viewer.wall.streams
    shown = lambda s: s.controller.meter.shown  # noqa: E731
    harness.run(until(lambda: shown(a) >= 3 and shown(b) >= 3, what="both tiles playing"))

    tile_action(viewer, a, "Pause this stream")
    assert a.state is LiveState.PAUSED and b.state is LiveState.PLAYING
    b_then = shown(b)
    harness.run(until(lambda: shown(b) >= b_then + 5, what="a's last requests back meanwhile"))
    a_paused, b_then = shown(a), shown(b)
    harness.run(until(lambda: shown(b) >= b_then + 10, what="b playing on"))
    assert shown(a) == a_paused, "a paused tile shows no new frame"
    tile_action(viewer, a, "Resume this stream")
    harness.run(until(lambda: shown(a) >= a_paused + 3, what="a resumed"))

    tile_action(viewer, a, "Stop this stream")
    harness.run(until(lambda: a.state is LiveState.STOPPED, what="a stopped"))
    b_then = shown(b)
    harness.run(until(lambda: shown(b) >= b_then + 10 and b.state is LiveState.PLAYING, what="b on"))
    tile_action(viewer, a, "Play this stream again")
    harness.run(until(lambda: a.state is LiveState.PLAYING, what="a playing again"))

    # Tracking: this tile alone; Analyse > Track objects still switches them all.
    tile_action(viewer, a, "Track this stream")
    assert a.tracking.enabled and not b.tracking.enabled
    harness.run(
        until(lambda: a.tracking.tracker is not None and bool(a.tracking.tracker.book.tracks), what="a track")
    )
    viewer.analysis.track_action.setChecked(True)
    assert a.tracking.enabled and b.tracking.enabled

    # Recording: this tile's annotated frames to its own file; the other tile records nothing.
    target = tmp_path / "tile-a"
    viewer.wall_ui.ask_record_path = lambda stream, default: str(target) if stream is a else None
    tile_action(viewer, a, "Record this stream…")
    harness.run(until(lambda: a.controller.recorder.active, what="a recording"))
    assert a.tile.title.text().startswith("●") and not b.tile.title.text().startswith("●")
    from_frame = shown(a)
    harness.run(until(lambda: shown(a) >= from_frame + 15, what="15 frames recorded"))
    tile_action(viewer, a, "Stop recording this stream")
    # OFF once the file is closed and its summary known (not merely the writer stopped).
    harness.run(until(lambda: a.controller.recorder.state is RecordingState.OFF, what="written"))
    video = target.with_suffix(".mp4")
    capture = cv2.VideoCapture(str(video))
    frames = int(capture.get(cv2.CAP_PROP_FRAME_COUNT))
    capture.release()
    assert frames >= 10, (frames, a.tile.message_text())
    assert video.name in a.tile.message.toolTip()
    assert not a.tile.title.text().startswith("●") and b.controller.recorder.state.value == "off"
    assert b.state is LiveState.PLAYING
