"""Model > Repository…: the server's model repository (every model, its state and the server's
reason when it is not ready), Load / Unload / Reload, the config a model runs with as
`config.pbtxt` text, and a config file to load a model with.

Every call to the server runs on the executor, one at a time (an asyncio lock: the
repository client is used from one thread at a time), never on the GUI thread. The list is
read again after each action and handed on (`models_changed`), so the viewer's model list
follows.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
from collections.abc import Callable
from concurrent.futures import Executor
from pathlib import Path
from typing import Any, TypeVar

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor, QFontDatabase
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)
from superqt.utils import signals_blocked

from app.inference.introspection.model_config import ConfigError, read_config_file
from app.inference.introspection.repository import (
    RepositoryControl,
    RepositoryError,
    control_disabled_message,
)
from app.inference.protocol import Endpoint
from app.inference.transports.channel import ConnectionOptions
from app.model_states import ModelEntry, ModelState
from app.ui.base.tasks import TaskSet
from app.ui.base.window_fit import secondary_window

T = TypeVar("T")
COLUMNS = ("Model", "Version", "State", "Reason")
STATE_COLORS: dict[str, QColor] = {
    ModelState.READY: QColor(46, 125, 50),
    ModelState.UNAVAILABLE: QColor(198, 40, 40),
}
NOT_CONNECTED = "Connect to a server first"
CONFIG_FILTER = "Model config (config.pbtxt *.pbtxt *.json);;All files (*)"


class RepositoryWindow(QDialog):
    """`set_server(endpoint, options)` points it at the viewer's server; `refresh()`, `load()`,
    `unload()`, `reload()` are coroutines (the buttons spawn them; tests await them) that
    return whether the server did it."""

    models_changed = Signal(list)  # [ModelEntry], after every read of the index
    model_loaded = Signal(str)  # a model was loaded or reloaded: its config may differ now

    def __init__(self, parent: QWidget | None, executor: Executor, tasks: TaskSet) -> None:
        super().__init__(parent)
        self.setWindowTitle("Model repository")
        self.setModal(False)
        self._executor, self._tasks = executor, tasks
        self._control: RepositoryControl | None = None
        self._server: tuple[Endpoint, ConnectionOptions | None] | None = None
        self._lock = asyncio.Lock()  # one call to the server at a time
        self.entries: list[ModelEntry] = []
        self.control_enabled: bool | None = None  # None: not known yet
        self._busy = False
        self.last_error: str | None = None  # what the message line says when it is an error

        self.server_label = QLabel(NOT_CONNECTED)
        self.server_label.setWordWrap(True)
        self.control_note = QLabel()
        self.control_note.setWordWrap(True)
        self.control_note.setStyleSheet("color: #b26a00")
        self.control_note.hide()
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(list(COLUMNS))
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().hide()
        header = self.table.horizontalHeader()
        for col in range(3):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)
        self.config_view = QPlainTextEdit()
        self.config_view.setReadOnly(True)
        self.config_view.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.config_view.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.config_view.setPlaceholderText("Select a model: the config the server runs it with")
        self.refresh_button = QPushButton("Refresh")
        self.load_button = QPushButton("Load")
        self.load_button.setToolTip(
            "Load the model from the repository's files (a loaded one is reloaded "
            "only if its files changed: Triton's rule)"
        )
        self.unload_button = QPushButton("Unload")
        self.reload_button = QPushButton("Reload")
        self.reload_button.setToolTip(
            "Unload, then load from the repository's files (drops a config "
            "loaded with a file or by Tune's Apply)"
        )
        self.config_file = QLineEdit()
        self.config_file.setPlaceholderText("config.pbtxt or JSON file to load the selected model with")
        self.browse_button = QPushButton("Browse…")
        self.load_file_button = QPushButton("Load with this config")
        self.load_file_button.setToolTip(
            "Load the selected model with this config instead of the repository's file (the whole "
            "config, as shown on the right; nothing is written on the server)"
        )
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        actions = QHBoxLayout()
        for button in (self.refresh_button, self.load_button, self.unload_button, self.reload_button):
            actions.addWidget(button)
        actions.addStretch(1)
        with_file = QHBoxLayout()
        with_file.addWidget(self.config_file, 1)
        with_file.addWidget(self.browse_button)
        with_file.addWidget(self.load_file_button)
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(self.table)
        split.addWidget(self.config_view)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        layout = QVBoxLayout(self)
        layout.addWidget(self.server_label)
        layout.addWidget(self.control_note)
        layout.addLayout(actions)
        layout.addWidget(split, 1)
        layout.addLayout(with_file)
        layout.addWidget(self.message)

        self.refresh_button.clicked.connect(lambda: self._spawn(self.refresh(), "repository: refresh"))
        self.load_button.clicked.connect(lambda: self._on_selected(self.load))
        self.unload_button.clicked.connect(lambda: self._on_selected(self.unload))
        self.reload_button.clicked.connect(lambda: self._on_selected(self.reload))
        self.load_file_button.clicked.connect(self._on_load_file)
        self.browse_button.clicked.connect(self._browse)
        self.table.itemSelectionChanged.connect(self._on_selection)
        self.resize(860, 520)
        secondary_window(self)  # fits the screen, frame included; Esc / Ctrl+W close it
        self._update_buttons()

    # -- the server ------------------------------------------------------------------------------
    def set_server(self, endpoint: Endpoint | None, options: ConnectionOptions | None) -> None:
        """The viewer's server (None: not connected). A new server: the list is read again."""
        server = None if endpoint is None else (endpoint, options)
        if server == self._server:
            return
        self._server = server
        old, self._control = self._control, None
        if old is not None:
            self._tasks.spawn(self._close(old), name="repository: close")
        self.entries, self.control_enabled = [], None
        self.table.setRowCount(0)
        self.config_view.clear()
        self.control_note.hide()
        self.server_label.setText(
            NOT_CONNECTED if endpoint is None else f"Server {html.escape(endpoint.url)}"
        )
        self._update_buttons()
        if endpoint is not None and self.isVisible():
            self._spawn(self.refresh(), "repository: refresh")

    @property
    def url(self) -> str | None:
        return None if self._server is None else self._server[0].url

    def showEvent(self, event: Any) -> None:
        super().showEvent(event)
        if self._server is not None and not self._busy:
            self._spawn(self.refresh(), "repository: refresh")

    # -- actions (coroutines) --------------------------------------------------------------------
    async def refresh(self) -> bool:
        """Read the index (and, once per server, whether loading is allowed)."""
        return await self._run("reading the repository…", None, None)

    async def load(self, name: str, config_path: str | None = None) -> bool:
        if config_path:
            try:
                config = await self._call(read_config_file, config_path)
            except ConfigError as e:
                self._say(str(e), error=True)
                return False
            what = f"loaded '{name}' with the config of {config_path}"
            return await self._run(f"loading '{name}'…", lambda c: c.load(name, config), what, name)
        return await self._run(f"loading '{name}'…", lambda c: c.load(name), f"loaded '{name}'", name)

    async def unload(self, name: str) -> bool:
        return await self._run(f"unloading '{name}'…", lambda c: c.unload(name), f"unloaded '{name}'")

    async def reload(self, name: str) -> bool:
        """Back to the repository's own files: unload, then load."""
        done = f"reloaded '{name}' from the repository's files"
        return await self._run(f"reloading '{name}'…", lambda c: c.reload_from_files(name), done, name)

    async def _run(
        self,
        doing: str,
        action: Callable[[RepositoryControl], object] | None,
        done: str | None,
        loaded: str | None = None,
    ) -> bool:
        if self._server is None:
            self._say(NOT_CONNECTED, error=True)
            return False
        server = self._server
        async with self._lock:
            if server != self._server:
                return False  # another server meanwhile
            self._set_busy(True, doing)
            ok = True
            try:
                control = await self._client()
                if action is not None:
                    try:
                        await self._call(action, control)
                    except RepositoryError as e:
                        self._say(str(e), error=True)
                        ok = False
                    else:
                        if done:
                            self._say(done)
                if self.control_enabled is None:
                    self.control_enabled = await self._call(control.control_enabled)
                    self._show_control(control.url)
                entries = await self._call(control.index)
            except RepositoryError as e:  # the index or the control check: the server is gone
                self._say(str(e), error=True)
                return False
            finally:
                self._set_busy(False)
                if self.message.text() == doing:
                    self._say("")  # done, with nothing to report (a refresh)
            if server != self._server:
                return False
            self._show_entries(entries)
            self.models_changed.emit(list(entries))
        if ok and loaded is not None:
            # After the list was read (the lock released): a listener may reconnect the viewer.
            self.model_loaded.emit(loaded)
        await self._show_config()
        return ok

    async def _client(self) -> RepositoryControl:
        if self._control is None:
            assert self._server is not None
            endpoint, options = self._server
            # Made on the executor: creating a gRPC client may resolve names.
            self._control = await self._call(RepositoryControl, endpoint, options)
        return self._control

    async def _close(self, control: RepositoryControl) -> None:
        async with self._lock:  # after the call under way: closing cuts its channel
            await self._call(control.close)

    async def _call(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)

    def _spawn(self, coro: Any, name: str) -> None:
        self._tasks.spawn(coro, name=name)

    # -- what is shown ---------------------------------------------------------------------------
    def selected(self) -> str | None:
        rows = self.table.selectionModel().selectedRows()
        if not rows:
            return None
        item = self.table.item(rows[0].row(), 0)
        return None if item is None else item.text()

    def select(self, name: str) -> None:
        for row in range(self.table.rowCount()):
            item = self.table.item(row, 0)
            if item is not None and item.text() == name:
                self.table.selectRow(row)
                return

    def state_of(self, name: str) -> str | None:
        """The state last read ("" not loaded), None for a model not in the repository."""
        return next((e.state for e in self.entries if e.name == name), None)

    def _show_entries(self, entries: list[ModelEntry]) -> None:
        chosen = self.selected()
        self.entries = list(entries)
        with signals_blocked(self.table):
            self.table.setRowCount(len(entries))
            for row, entry in enumerate(entries):
                values = (entry.name, entry.version or "-", entry.state_text, entry.reason)
                for col, text in enumerate(values):
                    item = QTableWidgetItem(text)
                    if col == 3 and text:
                        item.setToolTip(text)
                    if col == 2 and entry.state in STATE_COLORS:
                        item.setForeground(STATE_COLORS[entry.state])
                    self.table.setItem(row, col, item)
        if chosen is not None:
            self.select(chosen)
        self._update_buttons()

    def _show_control(self, url: str) -> None:
        disabled = self.control_enabled is False
        self.control_note.setText(control_disabled_message(url).capitalize() + "." if disabled else "")
        self.control_note.setVisible(disabled)
        self._update_buttons()

    def _on_selection(self) -> None:
        self._update_buttons()
        self._spawn(self._show_config(), "repository: config")

    async def _show_config(self) -> None:
        name = self.selected()
        if name is None:
            self.config_view.clear()
            return
        entry = next((e for e in self.entries if e.name == name), None)
        if entry is None or not entry.ready:
            why = f": {entry.reason}" if entry is not None and entry.reason else ""
            self.config_view.setPlainText(f"# '{name}' is not loaded{why}")
            return
        control = self._control
        if control is None:
            return
        async with self._lock:
            try:
                text = await self._call(control.config_text, name)
            except RepositoryError as e:
                text = f"# cannot read the config of '{name}': {e}"
        if self.selected() == name:  # still the one selected
            self.config_view.setPlainText(text)

    def config_text(self) -> str:
        return self.config_view.toPlainText()

    def _set_busy(self, busy: bool, doing: str = "") -> None:
        self._busy = busy
        if busy:
            self._say(doing)
        self._update_buttons()

    def _say(self, text: str, error: bool = False) -> None:
        self.message.setText(text)
        self.message.setStyleSheet("color: #c62828" if error else "")
        self.last_error = text if error else None

    def _update_buttons(self) -> None:
        connected = self._server is not None
        self.refresh_button.setEnabled(connected and not self._busy)
        name = self.selected()
        if not connected:
            why: str | None = NOT_CONNECTED
        elif self.control_enabled is False:
            why = "The server does not allow loading or unloading models (its model control mode)"
        elif name is None:
            why = "Select a model in the list"
        else:
            why = "Busy: wait for the last action" if self._busy else None
        loaded = name is not None and self.state_of(name) == ModelState.READY
        for button, extra in (
            (self.load_button, None),
            (self.load_file_button, None),
            (self.unload_button, None if loaded else "The model is not loaded"),
            (self.reload_button, None),
        ):
            reason = why or extra
            button.setEnabled(reason is None)
            if reason is not None:
                button.setToolTip(reason)
        self.browse_button.setEnabled(connected)

    # -- buttons ---------------------------------------------------------------------------------
    def _on_selected(self, action: Callable[[str], Any]) -> None:
        name = self.selected()
        if name is not None:
            self._spawn(action(name), "repository: action")

    def _on_load_file(self) -> None:
        name = self.selected()
        path = self.config_file.text().strip()
        if name is None:
            return
        if not path:
            self._say("Choose a config file first (Browse…)", error=True)
            return
        self._spawn(self.load(name, path), "repository: load with a config")

    def _browse(self) -> None:
        start = self.config_file.text().strip() or str(Path.home())
        path, _ = QFileDialog.getOpenFileName(
            self,
            "A config to load the model with",
            start,
            CONFIG_FILTER,
            options=QFileDialog.Option.DontUseNativeDialog,
        )
        if path:
            self.config_file.setText(path)

    # -- closing ---------------------------------------------------------------------------------
    async def shutdown(self) -> None:
        """The viewer closes (an action under way has finished or failed by now)."""
        self.close()
        control, self._control = self._control, None
        if control is not None:
            with contextlib.suppress(Exception):
                await self._close(control)
