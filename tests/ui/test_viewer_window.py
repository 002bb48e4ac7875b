"""The whole window against the real server: drag-and-drop, boxes, sliders, threads, batches."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import cv2
import numpy as np
import pytest
from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt, QThread, QTimer, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QApplication
from skimage import data

from app.inference.core.session import SessionState, TritonSession
from app.inference.core.spec import SessionSpec
from app.inference.protocol import parse_endpoints
from app.inference.result import InferenceResult
from app.pipeline.batch import BatchCounts
from app.pipeline.connection.state import ConnectionState
from app.server.embedded import EmbeddedServer
from app.ui.viewer import Viewer
from tests.ui.viewer_fixtures import Harness, image_folder, slow_image, until, write_png

pytestmark = [pytest.mark.gui, pytest.mark.slow]


def drop(viewer: Viewer, paths: list[Path]) -> None:
    """A real drag enter + drop of file URLs on the main window."""
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(p)) for p in paths])
    enter = QDragEnterEvent(
        QPoint(50, 50),
        Qt.DropAction.CopyAction,
        mime,
        Qt.MouseButton.LeftButton,
        Qt.KeyboardModifier.NoModifier,
    )
    QApplication.sendEvent(viewer.window, enter)
    assert enter.isAccepted()
    event = QDropEvent(
        QPointF(50, 50),
        Qt.DropAction.CopyAction,
        mime,
        Qt.MouseButton.LeftButton,
        Qt.KeyboardModifier.NoModifier,
    )
    QApplication.sendEvent(viewer.window, event)
    assert event.isAccepted()


def job_done(viewer: Viewer) -> bool:
    return viewer.runner.latest_counts() is not None and not viewer.runner.active()


def test_drop_files_and_a_folder_shows_results(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    astronaut = write_png(tmp_path / "astronaut.png", data.astronaut())
    folder = image_folder(tmp_path / "folder", 3, data.coffee())
    viewer = harness.viewer(triton.grpc_url, "face_detector")
    harness.connected(viewer)
    drop(viewer, [astronaut, folder])
    harness.run(until(lambda: job_done(viewer) and viewer.gallery.current_image is not None, what="results"))
    results = viewer.gallery.results
    assert set(results) == {str(astronaut), *(str(p) for p in sorted(folder.iterdir()))}
    assert all(r.ok for r in results.values())
    assert len(results[str(astronaut)].detections) == 1
    assert all(not results[str(p)].detections for p in folder.iterdir())  # no face on coffee
    assert viewer.window.strip.keys() and set(viewer.window.strip.keys()) == set(results)
    harness.run(until(lambda: viewer.window.request_log.visible_row_count() == 4, what="log rows"))
    assert "4 inputs · 4 ok · 0 failed" in viewer.window.batch_panel.summary.text()


def test_boxes_at_the_face_and_sliders_refilter_without_requests(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    image = data.astronaut()
    path = write_png(tmp_path / "astronaut.png", image)
    with TritonSession(
        SessionSpec(endpoints=parse_endpoints(triton.grpc_url), model="face_detector")
    ) as session:
        expected = session.infer(image).detections
    assert len(expected) == 1
    viewer = harness.viewer(triton.grpc_url, "face_detector", open_paths=[str(path)])
    harness.run(until(lambda: len(viewer.window.view.box_items()) == 1, what="the face box"))
    # The profile's thresholds are the initial slider values.
    assert (viewer.window.thresholds.score(), viewer.window.thresholds.iou()) == (0.5, 0.3)
    item = viewer.window.view.box_items()[0]
    scene = item.mapRectToScene(item.rect())
    x1, y1, x2, y2 = expected[0].box
    assert (scene.left(), scene.top(), scene.right(), scene.bottom()) == pytest.approx(
        (x1, y1, x2, y2), abs=0.01
    )
    assert 170 <= scene.left() <= 200 and 260 <= scene.right() <= 290  # the astronaut's face

    session = viewer.connection.session
    assert session is not None
    sent = session.stats.snapshot().sent
    viewer.window.thresholds.score_slider().setValue(99)  # above the face's score
    assert viewer.window.view.box_items() == []
    viewer.window.thresholds.score_slider().setValue(50)
    assert len(viewer.window.view.box_items()) == 1
    harness.run(asyncio.sleep(0.3))
    assert session.stats.snapshot().sent == sent  # re-filtered, no new request


def test_results_on_gui_thread_and_gui_never_blocked(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    folder = image_folder(tmp_path / "slow", 64, slow_image(300))
    viewer = harness.viewer(triton.grpc_url, "slow_faces")
    harness.connected(viewer)
    threads: list[object] = []
    viewer.runner.result.connect(lambda _job, _r: threads.append(QThread.currentThread()))
    beats_in_flight = 0

    def beat() -> None:
        nonlocal beats_in_flight
        session = viewer.connection.session
        if session is not None and session.in_flight > 0:
            beats_in_flight += 1

    heartbeat = QTimer()
    heartbeat.setInterval(10)
    heartbeat.timeout.connect(beat)
    heartbeat.start()
    viewer.open_paths([str(folder)])
    harness.run(until(lambda: job_done(viewer), what="64 slow requests"))
    heartbeat.stop()
    assert len(threads) == 64
    main = QApplication.instance().thread()  # type: ignore[union-attr]
    assert all(t is main for t in threads)
    # 64 requests of >= 300 ms each were in flight: a GUI thread that blocked on them
    # (network wait or decoding) would not have ticked while they were.
    assert beats_in_flight >= 10
    counts = viewer.runner.latest_counts()
    assert counts is not None and (counts.ok, counts.failed) == (64, 0)


def test_batch_counts_with_corrupt_files(harness: Harness, triton: EmbeddedServer, tmp_path: Path) -> None:
    folder = image_folder(tmp_path / "batch", 200, data.coffee()[::20, ::20].copy(), corrupt=2)
    viewer = harness.viewer(triton.grpc_url, "face_detector", open_paths=[str(folder)])
    harness.run(until(lambda: job_done(viewer), what="the batch"))
    counts = viewer.runner.latest_counts()
    assert counts is not None
    assert (counts.total, counts.ok, counts.failed, counts.cancelled) == (202, 200, 2, 0)
    assert "202 inputs · 200 ok · 2 failed" in viewer.window.batch_panel.summary.text()
    banner = viewer.window.banner.text()
    assert "corrupt_1.png" in banner or "corrupt_0.png" in banner
    assert banner.count(str(folder)) == 1, "the file is named once, with the cause"
    assert viewer.window.strip.status(str(folder / "corrupt_0.png")) is False
    harness.run(until(lambda: viewer.window.request_log.visible_row_count() == 202, what="log rows"))
    viewer.window.request_log.failures_only.setChecked(True)
    assert viewer.window.request_log.visible_row_count() == 2


def test_cancel_stops_the_batch(harness: Harness, triton: EmbeddedServer, tmp_path: Path) -> None:
    folder = image_folder(tmp_path / "cancel", 200, slow_image(100))
    viewer = harness.viewer(triton.grpc_url, "slow_faces", open_paths=[str(folder)])
    harness.run(until(lambda: (viewer.runner.latest_counts() or BatchCounts(0)).ok >= 5))
    viewer.window.batch_panel.cancel_button.click()
    harness.run(until(lambda: job_done(viewer), what="the cancelled batch to end"))
    counts = viewer.runner.latest_counts()
    session = viewer.connection.session
    assert counts is not None and session is not None
    assert counts.cancelled + counts.not_started > 0 and counts.ok < 200
    assert counts.ok + counts.failed + counts.cancelled + counts.not_started == counts.total == 200
    assert "cancelled" in viewer.window.batch_panel.summary.text()
    harness.run(until(lambda: session.in_flight == 0, what="in flight to drain"))
    sent = session.stats.snapshot().sent
    harness.run(asyncio.sleep(0.5))
    assert session.stats.snapshot().sent == sent  # nothing submitted after Cancel


def test_close_with_requests_in_flight_is_clean(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = image_folder(tmp_path / "slow", 64, slow_image(1000))
    viewer = harness.viewer(triton.grpc_url, "slow_faces", open_paths=[str(folder)])
    harness.run(
        until(lambda: viewer.connection.session is not None and viewer.connection.session.in_flight >= 8)
    )
    session = viewer.connection.session
    assert session is not None
    delivered: list[InferenceResult] = []
    viewer.runner.result.connect(lambda _job, r: delivered.append(r))
    before = len(delivered)
    harness.close(viewer)
    snap = session.stats.snapshot()
    assert session.state is SessionState.CLOSED and session.in_flight == 0
    assert snap.in_flight == 0 and snap.sent == snap.completed  # every request ended
    assert snap.cancelled > 0
    harness.run(asyncio.sleep(0.3))
    assert len(delivered) == before  # nothing reaches the closed window
    assert not viewer.window.isVisible()
    assert not [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")]


def test_server_going_away_shows_disconnected(harness: Harness, tmp_path: Path) -> None:
    from app.resources import model_repository

    server = EmbeddedServer(model_repository())
    server.start()
    try:
        viewer = harness.viewer(server.grpc_url, "face_detector")
        harness.connected(viewer)
        assert "Connected" in viewer.window.server_panel.state_text()
        server.stop()
        disconnected = ConnectionState.DISCONNECTED
        harness.run(until(lambda: viewer.window.server_panel.state() is disconnected, what="disconnected"))
        assert "Disconnected" in viewer.window.server_panel.state_text()
        # Still responsive: a new drop is taken, fails with a clear message instead of hanging.
        path = write_png(tmp_path / "a.png", np.full((32, 32, 3), 100, np.uint8))
        viewer.open_paths([str(path)])
        harness.run(until(lambda: job_done(viewer), what="the request to fail"))
        result = viewer.gallery.results[str(path)]
        assert not result.ok and "cannot reach" in (result.error or "")
    finally:
        server.stop()


def test_remembered_model_missing_on_the_server_falls_back(harness: Harness, triton: EmbeddedServer) -> None:
    from app.ui.base.settings import ViewerSettings

    ViewerSettings().set_model("no_such_model")  # the test's temporary settings
    viewer = harness.viewer(triton.grpc_url)
    harness.connected(viewer)
    assert viewer.connection.session is not None
    assert viewer.connection.session.info is not None
    assert viewer.connection.session.info.name == "face_detector"
    assert viewer.window.server_panel.current_model() == "face_detector"


def test_a_file_changed_on_disk_is_never_shown_with_its_old_boxes(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    path = write_png(tmp_path / "photo.png", data.astronaut())  # one face
    other = write_png(tmp_path / "other.png", data.coffee())
    viewer = harness.viewer(triton.grpc_url, "face_detector")
    harness.connected(viewer)
    viewer.open_paths([str(path), str(other)])
    key = str(path)
    gallery = viewer.gallery
    harness.run(until(lambda: job_done(viewer) and key in gallery.results, what="results"))
    gallery.select(key)
    harness.run(until(lambda: gallery.current_key == key and gallery.current_image is not None, what="shown"))
    assert len(viewer.window.view.box_items()) == 1

    # The file is replaced (another picture, another size): showing it again draws no old box.
    write_png(path, data.coffee())
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 10**9))
    gallery.select(str(other))
    harness.run(until(lambda: gallery.current_key == str(other) and gallery.current_image is not None))
    gallery.select(key)
    harness.run(until(lambda: gallery.current_image is not None and key in gallery.stale, what="stale"))
    assert gallery.current_image.shape == data.coffee().shape
    assert viewer.window.view.box_items() == []
    assert "changed on disk since it was inferred" in viewer.window.banner.text()
    png = tmp_path / "export.png"
    viewer.exporter.export_png(str(png))
    status = viewer.window.statusBar()
    harness.run(until(lambda: status.currentMessage() == f"exported {png}", what="the PNG export"))
    exported = cv2.cvtColor(cv2.imread(str(png)), cv2.COLOR_BGR2RGB)
    assert np.array_equal(exported, data.coffee()), "the picture as it is now, with no old box drawn on it"

    # Opened again: inferred again (no face in the coffee), and the entry is current again.
    first = gallery.results[key]
    viewer.open_paths([str(path)])
    harness.run(
        until(
            lambda: job_done(viewer) and gallery.results.get(key) not in (None, first), what="the new result"
        )
    )
    harness.run(until(lambda: gallery.current_image is not None, what="shown again"))
    assert gallery.results[key].ok and gallery.results[key].detections == []
    assert key not in gallery.stale
    assert gallery.current_image.shape == data.coffee().shape
    assert viewer.window.view.box_items() == []
