"""What the Tune window does with a result: Apply (the recommended config loaded on the
server, after a question naming the server and the model), Save config.pbtxt…, and the CSV
and PNG exports. Files are written whole or not at all, on the executor; so is the load."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from concurrent.futures import Executor
from pathlib import Path
from typing import Any

from PySide6.QtWidgets import QFileDialog, QMessageBox, QWidget

from app.inference.introspection.model_config import ModelConfigDict
from app.inference.introspection.repository import RepositoryControl, RepositoryError
from app.inference.protocol import Endpoint
from app.inference.transports.channel import ConnectionOptions
from app.pipeline.tune import TuneResult
from app.pipeline.tune_export import recommended_config_text, write_csv
from app.system.atomic_files import write_whole
from app.ui.base.qimage import write_png

# kind: (dialog title, file filter, suggested name with {stem})
SAVE_DIALOGS = {
    "config": ("Save the recommended config", "Model config (*.pbtxt);;All files (*)", "config.pbtxt"),
    "csv": ("Export the tune (CSV)", "CSV (*.csv)", "tune-{stem}.csv"),
    "png": ("Export the tune's plot (PNG)", "PNG image (*.png)", "tune-{stem}.png"),
}


def load_config(
    endpoint: Endpoint, options: ConnectionOptions | None, model: str, config: ModelConfigDict
) -> None:
    """Blocking (the executor): load `model` with `config` (an override, not written)."""
    with RepositoryControl(endpoint, options) as control:
        control.load(model, config)


class TuneOutputs:
    """`say(text, error)` reports on the window's message line."""

    def __init__(self, parent: QWidget, executor: Executor, say: Callable[[str, bool], None]) -> None:
        self._parent, self._executor, self._say = parent, executor, say
        self.confirmation: QMessageBox | None = None  # the Apply question while it is open

    # -- Apply -----------------------------------------------------------------------------------
    def ask_apply(self, result: TuneResult, on_yes: Callable[[], object]) -> None:
        """The question (window-modal, no nested event loop); `on_yes()` when answered yes."""
        rec = result.recommendation
        if rec is None:
            return
        box = QMessageBox(
            QMessageBox.Icon.Question,
            "Apply the recommended config?",
            f"Load '{result.model}' on the server {result.url} with the recommended config: "
            f"{rec.settings.describe()}?\n\nEverything else of its config stays as it is. The server runs "
            "the model with it until the model is loaded again or the server restarts (nothing is "
            "written on the server; Save config.pbtxt… keeps it in a file).",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel,
            self._parent,
        )
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)
        self.confirmation = box

        def answered(_code: int) -> None:
            yes = box.clickedButton() is box.button(QMessageBox.StandardButton.Yes)
            self.confirmation = None
            box.deleteLater()
            if yes:
                on_yes()

        box.finished.connect(answered)
        box.open()

    def close_question(self) -> None:
        if self.confirmation is not None:
            self.confirmation.close()

    async def apply(self, result: TuneResult, options: ConnectionOptions | None) -> bool:
        config = result.recommended_config()
        if config is None or result.recommendation is None:
            return False
        self._say(f"loading '{result.model}' with the recommended config…", False)
        try:
            await self._call(load_config, result.endpoint, options, result.model, config)
        except RepositoryError as e:
            self._say(f"Apply failed: {e}", True)
            return False
        self._say(
            f"'{result.model}' on {result.url} now runs with {result.recommendation.settings.describe()} "
            "(until it is loaded again or the server restarts).",
            False,
        )
        return True

    # -- files -----------------------------------------------------------------------------------
    def ask_path(self, kind: str, model: str) -> str | None:
        title, filters, name = SAVE_DIALOGS[kind]
        suggested = name.format(stem=f"{model}-{time.strftime('%Y%m%d-%H%M')}")
        path, _ = QFileDialog.getSaveFileName(
            self._parent,
            title,
            str(Path.home() / suggested),
            filters,
            options=QFileDialog.Option.DontUseNativeDialog,
        )
        return path or None

    async def save_config(self, result: TuneResult, path: str) -> bool:
        try:
            text = recommended_config_text(result)
        except ValueError as e:
            self._say(str(e), True)
            return False
        return await self._write(path, write_whole, path, text)

    async def save_csv(self, result: TuneResult, path: str) -> bool:
        return await self._write(path, write_csv, path, result)  # itself whole or not at all

    async def save_png(self, plot: QWidget, path: str) -> bool:
        image = plot.grab().toImage()  # drawn here, on the GUI thread; written on the executor
        return await self._write(path, write_png, path, image)

    async def _write(self, path: str, fn: Callable[..., object], *args: Any) -> bool:
        try:
            await self._call(fn, *args)
        except OSError as e:
            self._say(f"cannot write {path}: {e.strerror or e}", True)
            return False
        self._say(f"wrote {path}", False)
        return True

    async def _call(self, fn: Callable[..., object], *args: Any) -> object:
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)
