"""The live preview's figures and controls that must stay true: the counts after a video
ended, Loop ticked while it plays, the state label that never cuts a word."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QFileDialog, QLineEdit

from app.pipeline.live import LiveState
from app.server.embedded import EmbeddedServer
from app.ui.analysis.scoped_stats import Scope
from app.ui.base.settings import ViewerSettings
from app.ui.main_window import Mode
from app.ui.viewer import Viewer
from tests.media import index_frame, make_index_video
from tests.ui.live_fixtures import make_slow_video
from tests.ui.viewer_fixtures import Harness, until, write_png

pytestmark = [pytest.mark.gui, pytest.mark.slow]


def ended(viewer: Viewer) -> bool:
    return viewer.live.state == "ended" and viewer.live.idle


def test_dropped_and_inferred_frames_stay_as_counted_after_the_video_ends(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    video = make_slow_video(tmp_path / "slow.avi", frames=45, delay_ms=150)  # 1.5 s; ~7 inferred
    viewer = harness.viewer(triton.grpc_url, "slow_faces", camera=str(video))
    viewer.live_ui.toolbar.in_flight.setValue(1)
    harness.run(until(lambda: ended(viewer), what="the video to end"))
    harness.run(until(lambda: not viewer.live.paint_pending, what="the last paint"))
    viewer.window.stats_panel.set_scope(Scope.LIVE)
    viewer.stats.poll()
    panel = viewer.window.stats_panel
    results = viewer.live.meter.results  # every result of the run, received here
    stream = viewer.live.stream_stats()
    assert stream is not None and stream.offered == 45 and stream.dropped > 0, stream
    assert results == stream.completed and results + stream.dropped == 45
    assert panel.value_text("Inferred frames") == f"{results} of 45"
    assert panel.value_text("Dropped frames").startswith(f"{stream.dropped} ("), panel.value_text(
        "Dropped frames"
    )
    assert not panel.value_text("Dropped frames").startswith("0")


def test_loop_ticked_while_a_video_plays_applies_at_once(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    video = tmp_path / "short.avi"
    make_index_video(video, frames=45)  # 1.5 s at 30 fps
    viewer = harness.viewer(triton.grpc_url, "face_detector", camera=str(video))
    harness.run(until(lambda: viewer.live.meter.shown >= 1, what="the first frame"))
    assert not viewer.live_ui.toolbar.loop.isChecked()
    viewer.live_ui.toolbar.loop.setChecked(True)  # ticked during playback, no new Start

    def looped() -> bool:
        run = viewer.live.live
        assert run is not None, f"the video ended although Loop was ticked ({viewer.live.state})"
        return run.capture.stats().captured > 45

    harness.run(until(looped, timeout=30, what="a second pass"))
    assert viewer.live.state == "playing"
    viewer.live_ui.toolbar.loop.setChecked(False)  # unticked: it ends at the end of this pass
    harness.run(until(lambda: ended(viewer), what="the end"))


def test_the_live_label_never_cuts_a_word(harness: Harness, triton: EmbeddedServer, tmp_path: Path) -> None:
    video = tmp_path / "a-video-with-a-rather-long-name.avi"
    make_index_video(video, frames=15)
    viewer = harness.viewer(triton.grpc_url, "face_detector", camera=str(video))
    w = viewer.window
    w.resize(1280, 720)
    harness.run(until(lambda: ended(viewer), what="the video to end"))
    assert w.mode is Mode.LIVE
    label = viewer.live_ui.toolbar.state_label
    full = label.text().strip()
    assert full == f"Ended: {video.name}: end of the file", full
    QApplication.processEvents()
    assert label.shown_text().strip() == full, "at 1280 px the whole state shows"
    w.resize(1024, 640)
    label.resize(label.fontMetrics().horizontalAdvance(full) // 2, label.height())  # a narrow toolbar
    shown = label.shown_text().strip()
    assert shown.endswith("…") and len(shown) < len(full), shown
    kept = shown[:-1].rstrip(" :")
    assert full.startswith(kept) and full[len(kept)] in " :", f"cut mid-word: {shown!r}"
    assert label.toolTip() and full.split(": ", 1)[1] in label.toolTip()


def test_the_record_dialog_starts_in_the_last_used_folder(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    photos, videos, records = (tmp_path / name for name in ("photos", "videos", "records"))
    for folder in (photos, videos, records):
        folder.mkdir()
    image = write_png(photos / "a.png", index_frame(1, (160, 120)))
    viewer = harness.viewer(triton.grpc_url, "face_detector", open_paths=[str(image)])
    harness.connected(viewer)
    live_ui = viewer.live_ui
    assert Path(live_ui.record_default_path()).parent == photos, "the folder last opened from"
    video = videos / "clip.avi"
    make_index_video(video, frames=300)
    live_ui.open_source(str(video))
    harness.run(until(lambda: viewer.live.meter.shown >= 1, what="the video"))
    default = Path(live_ui.record_default_path())
    assert default.parent == videos and default.suffix == ".mp4", "the video's own folder"
    live_ui.record_to(str(records / "take1.mp4"))
    assert ViewerSettings().last_dir("record") == str(records), "remembered at once, not only at exit"
    harness.run(until(lambda: viewer.live.recorder.active, what="recording"))
    viewer.live.stop()
    harness.run(until(lambda: viewer.live.idle and not viewer.live.recorder.active, what="stopped"))
    assert Path(live_ui.record_default_path()).parent == records
    harness.close(viewer)
    again = harness.viewer(triton.grpc_url, "face_detector")  # the same settings folder
    assert Path(again.live_ui.record_default_path()).parent == records


def test_after_stop_the_batch_shows_again_at_the_image_the_user_left(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    photos = tmp_path / "photos"
    photos.mkdir()
    for i in range(4):
        write_png(photos / f"p{i}.png", index_frame(i + 1, (160, 120)))
    viewer = harness.viewer(triton.grpc_url, "face_detector", open_paths=[str(photos)])
    harness.connected(viewer)
    harness.run(
        until(lambda: not viewer.runner.active() and viewer.gallery.current_key is not None, what="batch")
    )
    keys = viewer.browser.visible()
    viewer.browser.select(keys[2])  # the user was at 3/4
    harness.run(until(lambda: viewer.gallery.current_key == keys[2], what="3/4 shown"))
    video = tmp_path / "clip.avi"
    make_index_video(video, frames=300)
    w, toolbar = viewer.window, viewer.live_ui.toolbar
    for leave_by in (toolbar.stop_action, w.next_action, w.prev_action):
        viewer.live_ui.open_source(str(video))
        harness.run(until(lambda: w.mode is Mode.LIVE and viewer.live.meter.shown >= 1, what="the video"))
        leave_by.trigger()
        assert w.mode is Mode.BATCH, f"{leave_by.text()}: the batch shows again"
        harness.run(
            until(lambda: viewer.gallery.current_key == keys[2], what=f"{leave_by.text()}: back at 3/4")
        )
        harness.run(until(lambda: viewer.live.idle, what="the stream stopped"))
    harness.close(viewer)


def test_the_record_dialog_pauses_a_file_while_it_is_open(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    video = tmp_path / "clip.avi"
    make_index_video(video, frames=600)
    viewer = harness.viewer(triton.grpc_url, "face_detector", camera=str(video))
    harness.run(until(lambda: viewer.live.meter.shown >= 1, what="the video"))
    assert viewer.live.state is LiveState.PLAYING
    # The dialog runs its own loop: opened from a plain timer, as a click would, and watched
    # from one coroutine (the harness stopping its loop would end the dialog's loop too).

    async def while_open() -> None:
        QTimer.singleShot(0, viewer.live_ui.toolbar.record_action.trigger)
        await until(lambda: QApplication.activeModalWidget() is not None, what="the Record dialog")
        dialog = QApplication.activeModalWidget()
        assert dialog is not None
        assert viewer.live.state is LiveState.PAUSED, "paused while the name is typed"
        shown = viewer.live.meter.shown
        await asyncio.sleep(0.5)
        assert viewer.live.meter.shown <= shown + 2, "no frames go by while the dialog is open"
        dialog.reject()
        await until(lambda: viewer.live.state is LiveState.PLAYING, what="playing again")
        await until(lambda: viewer.live.meter.shown > shown + 5, what="frames again")

    harness.run(while_open())
    harness.close(viewer)


def test_open_video_starts_in_the_folder_a_video_was_last_opened_from(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    photos, videos = tmp_path / "photos", tmp_path / "videos"
    for folder in (photos, videos):
        folder.mkdir()
    image = write_png(photos / "a.png", index_frame(1, (160, 120)))
    video = videos / "clip.avi"
    make_index_video(video, frames=30)
    viewer = harness.viewer(triton.grpc_url, "face_detector", open_paths=[str(image)])
    harness.connected(viewer)

    async def open_video(choose: Path | None) -> str:
        """Live > Open video… opened as a click would; where it starts; `choose` opened."""
        QTimer.singleShot(0, viewer.live_ui.open_video)
        await until(lambda: isinstance(QApplication.activeModalWidget(), QFileDialog), what="the dialog")
        dialog = QApplication.activeModalWidget()
        assert isinstance(dialog, QFileDialog)
        start = dialog.directory().absolutePath()
        if choose is None:
            dialog.reject()
        else:
            dialog.setDirectory(str(choose.parent))
            name = dialog.findChild(QLineEdit, "fileNameEdit")
            assert name is not None
            name.setText(choose.name)
            dialog.accept()
        await asyncio.sleep(0.1)
        return start

    assert harness.run(open_video(video)) == str(photos), "first time: the folder last opened from"
    harness.run(until(lambda: viewer.live.meter.shown >= 1, what="the video"))
    viewer.exporter._settings.set_last_dir("export", str(photos))  # an export since: not for videos
    assert harness.run(open_video(None)) == str(videos), "then: the folder of the last video"
    assert ViewerSettings().last_dir("video") == str(videos)
    harness.close(viewer)
