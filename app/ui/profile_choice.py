"""Which profile a model is opened with, and the Model menu's choice of one: the command
line's --profile/--labels (for --model, else the model opened first) until the user chooses
a profile file for that model; a choice is checked, remembered per model and applied by
reconnecting."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import Executor
from pathlib import Path
from typing import Any

from PySide6.QtWidgets import QFileDialog, QWidget

from app.inference.core.spec import ProfileSource
from app.inference.profiles.profile import ProfileError, load_profile_file
from app.ui.base.settings import ViewerSettings
from app.ui.base.tasks import TaskSet

NO_MODEL = "choose a model first: a profile is remembered per model"


class ProfileChoice:
    def __init__(
        self,
        parent: QWidget,
        settings: ViewerSettings,
        executor: Executor,
        tasks: TaskSet,
        report: Callable[[str, bool], None],  # (message, is_error)
        model: Callable[[], str | None],  # the model a choice is for (open, else last asked for)
        reconnect: Callable[[str], None],  # open `model` again (with its new profile)
        cli_profile: dict[str, Any] | None = None,
        cli_model: str | None = None,
    ) -> None:
        self._parent, self._settings = parent, settings
        self._executor, self._tasks, self._report = executor, tasks, report
        self._model, self._reconnect = model, reconnect
        self._cli_profile = cli_profile
        self._cli_model = cli_model

    def profile_for(self, model: str | None) -> ProfileSource:
        """What `model` is opened with: the command line's profile (for its model), else the
        profile file chosen for it earlier (read when the session opens, on the executor)."""
        cli = self._cli_profile
        if cli is not None and (self._cli_model is None or model in (None, self._cli_model)):
            return ProfileSource(overrides=cli)
        if model is None:
            return ProfileSource()
        path = self._settings.profile(model)
        return ProfileSource(file=Path(path) if path else None)

    def model_opened(self, model: str) -> None:
        """A session opened `model`: without --model, the command line's profile is this one's."""
        if self._cli_profile is not None and self._cli_model is None:
            self._cli_model = model

    def choose(self) -> None:
        """Model > Profile…: a file chooser."""
        model = self._model()
        if model is None:
            self._report(NO_MODEL, True)
            return
        path, _ = QFileDialog.getOpenFileName(
            self._parent,
            f"Profile for model {model}",
            "",
            "Profile (*.toml);;All files (*)",
            options=QFileDialog.Option.DontUseNativeDialog,
        )
        if path:
            self.set_profile(path, model)

    def set_profile(self, path: str | None, model: str | None = None) -> None:
        """Use the profile file `path` for `model` (default: the current one); None: the
        detected profile. The file is read on the executor; a bad one is refused with its message."""
        model = model or self._model()
        if model is None:
            self._report(NO_MODEL, True)
            return
        self._tasks.spawn(self._apply(model, path), name="profile")

    async def _apply(self, model: str, path: str | None) -> None:
        if path is not None:
            try:
                await asyncio.get_running_loop().run_in_executor(self._executor, load_profile_file, path)
            except ProfileError as e:
                self._report(str(e), True)
                return
        self._settings.set_profile(model, path)
        if self._cli_model in (None, model):
            self._cli_profile = None  # the user's choice wins over the command line's
        self._report(f"model {model}: {'profile ' + path if path else 'the detected profile'}", False)
        self._reconnect(model)
