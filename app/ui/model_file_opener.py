"""A model file in the viewer (dropped on the window, or Model > Open model file…): loaded on
the server the viewer is connected to (app.inference.model_files.upload: a --url Triton's own
onnxruntime backend first, else the app's Python-backend model; the embedded server gets that
one at once), then the viewer connects to its model.

Threads: the file is read and uploaded on the viewer's executor (reading a 100 MB file and a
load take seconds), never on the GUI thread; one file at a time (a second while one loads is
refused with a word). The embedded server keeps the model until it stops: a server restarted
after a crash has its bundled models only, and the file is to be opened again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import Executor
from pathlib import Path

from PySide6.QtGui import QAction
from PySide6.QtWidgets import QFileDialog, QWidget

from app.inference.introspection.repository import RepositoryControl, RepositoryError
from app.inference.model_files.reading import ModelFileError, is_model_file_name
from app.inference.model_files.upload import serve_model_file
from app.inference.protocol import parse_url
from app.pipeline.connection.state import ConnectionState
from app.ui.base.tasks import TaskSet
from app.ui.server.connection import ConnectionController

FILE_FILTER = "Model files (*.onnx *.tflite)"


def model_files_among(paths: list[str]) -> tuple[list[str], list[str]]:
    """(model files, the other paths) of a drop."""
    files = [p for p in paths if is_model_file_name(p) and Path(p).is_file()]
    return files, [p for p in paths if p not in files]


class ModelFileOpener:
    """`report(message, error)`: where the viewer shows a result (banner and status bar)."""

    def __init__(
        self,
        connection: ConnectionController,
        executor: Executor,
        tasks: TaskSet,
        report: Callable[[str, bool], None],
    ) -> None:
        self._connection = connection
        self._executor = executor
        self._tasks = tasks
        self._report = report
        self.loading: str | None = None  # the file being loaded
        self.loaded: list[str] = []  # the models loaded from files, in order (tests, the log)
        self._pending: str | None = None  # --model FILE, until connected
        connection.state_changed.connect(self._on_connection_state)

    def attach(self, action: QAction, parent: QWidget, folder: Callable[[], str]) -> None:
        """Model > Open model file…: `action` opens the file dialog in `folder()`."""
        action.triggered.connect(lambda: self.choose(parent, folder()))

    def model_of_option(self, model: str | None) -> str | None:
        """`--model`: a name is kept; a model file is opened once connected (None returned)."""
        if model is not None and is_model_file_name(model):
            self.open_when_connected(model)
            return None
        return model

    def take_files(self, paths: list[str]) -> list[str]:
        """A drop or an open: the first model file among `paths` is loaded; the others returned."""
        files, others = model_files_among([str(p) for p in paths])
        if files:
            self.open(files[0])
        return others

    def open_when_connected(self, path: str) -> None:
        """`--model FILE.onnx`: opened once the viewer is first connected (`on_connected`)."""
        self._pending = path

    def _on_connection_state(self, state: ConnectionState, _detail: str) -> None:
        if state is ConnectionState.CONNECTED:
            self.on_connected()

    def on_connected(self) -> None:
        path, self._pending = self._pending, None
        if path is not None:
            self.open(path)

    def choose(self, parent: QWidget | None, folder: str = "") -> None:
        """Model > Open model file…: a file dialog, then `open`."""
        path, _ = QFileDialog.getOpenFileName(parent, "Open a model file", folder, FILE_FILTER)
        if path:
            self.open(path)

    def open(self, path: str) -> None:
        if self.loading is not None:
            self._report(f"{Path(self.loading).name} is still loading: open {Path(path).name} after it", True)
            return
        target = self._connection.target
        urls = self._connection.urls
        if target is None or not urls:
            self._report(f"cannot load {path}: connect to a server first", True)
            return
        self.loading = path
        self._report(f"loading {Path(path).name} on {urls[0]} …", False)
        self._tasks.spawn(self._load(path, list(target.urls), urls[0]), name="model file")

    async def _load(self, path: str, asked: list[str], url: str) -> None:
        remote = bool(asked)  # [] = the embedded server: it has no onnxruntime backend
        target = self._connection.target
        options = target.connection if target is not None else None
        notes: list[str] = []

        def load() -> str:
            with RepositoryControl(parse_url(url), options) as control:
                return serve_model_file(control, path, own_backend_first=remote, note=notes.append)

        try:
            name = await asyncio.get_running_loop().run_in_executor(self._executor, load)
        except (ModelFileError, RepositoryError) as e:
            self._report(str(e), True)
            return
        finally:
            self.loading = None
        self.loaded.append(name)
        self._report(" ".join([*notes, f"{Path(path).name} loaded as '{name}'"]), False)
        self._connection.connect_to(asked, name)
