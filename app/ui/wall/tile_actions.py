"""One stream's own controls in its tile's menus: pause or resume, stop or play again, track
this stream, record this stream. Each acts on that stream alone (its LiveController, its
tracker, its recorder): the other tiles play on."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from PySide6.QtWidgets import QFileDialog, QMenu, QWidget

from app.pipeline.live import LiveState
from app.ui.live.live_panel import VIDEO_SUFFIXES
from app.ui.live.recording import RecordingState
from app.ui.wall.wall_stream import WallStream

# Asked where a stream's recording goes: a path, or None when the user cancels.
AskPath = Callable[[WallStream, str], str | None]


def ask_record_path(stream: WallStream, default: str) -> str | None:
    """Qt's own dialog (it asks before replacing an existing file)."""
    parent: QWidget = stream.tile
    path, _ = QFileDialog.getSaveFileName(
        parent,
        f"Record {stream.label}",
        default,
        "Video (*.mp4 *.avi *.mov *.m4v)",
        options=QFileDialog.Option.DontUseNativeDialog,
    )
    return path or None


def default_record_path(stream: WallStream, folder: str) -> str:
    """In `folder`, named after the stream and the time: tiles recorded at once never clash."""
    name = "".join(c if c.isalnum() or c in "-_." else "_" for c in Path(stream.label).stem) or "stream"
    return str(Path(folder) / time.strftime(f"{name}-%Y%m%d-%H%M%S.mp4"))


def add_stream_controls(stream: WallStream, menu: QMenu, record_folder: str, ask_path: AskPath) -> None:
    live, state = stream.controller, stream.controller.state
    if state is LiveState.PLAYING:
        menu.addAction("Pause this stream", live.pause)
    elif state is LiveState.PAUSED:
        menu.addAction("Resume this stream", live.start)
    if state in (LiveState.PLAYING, LiveState.PAUSED, LiveState.WAITING):
        menu.addAction("Stop this stream", live.stop)
    elif state in (LiveState.STOPPED, LiveState.ENDED, LiveState.FAILED):
        menu.addAction("Play this stream again", live.start)
    track = menu.addAction("Track this stream")
    track.setCheckable(True)
    track.setChecked(stream.tracking.enabled)
    track.toggled.connect(stream.tracking.set_enabled)
    recorder = live.recorder
    if recorder.state is RecordingState.OFF:

        def record() -> None:
            path = ask_path(stream, default_record_path(stream, record_folder))
            if path:
                record_stream(stream, path)

        menu.addAction("Record this stream…", record)
    else:
        menu.addAction("Stop recording this stream", lambda: stream.parts.tasks.spawn(
            recorder.stop(), name=f"{stream.label}: stop recording"))  # fmt: skip


def record_stream(stream: WallStream, path: str) -> None:
    if Path(path).suffix.lower() not in VIDEO_SUFFIXES:
        path += ".mp4"
    stream.controller.recorder.start(path)
