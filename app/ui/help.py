"""Help menu: the keyboard shortcuts (read from the window's own actions, so the list is
always true) and About (versions of the viewer, Qt, PySide6, tritonclient, the server; the
bundled models)."""

from __future__ import annotations

import asyncio
import html
import importlib.metadata
import platform
from collections.abc import Callable
from concurrent.futures import Executor

import PySide6
import shiboken6
from PySide6.QtCore import Qt, qVersion
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QLabel,
    QMainWindow,
    QMenu,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app import __version__
from app.inference.core.session import TritonSession
from app.inference.introspection.server_info import server_version
from app.resources import BUNDLED_MODELS, bundled_models
from app.ui.base.tasks import TaskSet
from app.ui.base.window_fit import secondary_window


def package_version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def versions(server: str | None) -> list[tuple[str, str]]:
    return [
        ("Triton Inference Viewer", __version__),
        ("Qt", qVersion()),
        ("PySide6", PySide6.__version__),
        ("tritonclient", package_version("tritonclient")),
        ("Python", platform.python_version()),
        ("Server", server or "not connected"),
    ]


def shortcut_rows(window: QMainWindow) -> list[tuple[str, str, str]]:
    """(menu, action, shortcuts) for every action of the menu bar that has a shortcut."""
    rows: list[tuple[str, str, str]] = []

    def walk(menu: QMenu, path: str) -> None:
        for action in menu.actions():
            sub = action.menu()
            if isinstance(sub, QMenu):
                walk(sub, f"{path} > {action.text().replace('&', '')}")
                continue
            keys = [k.toString(QKeySequence.SequenceFormat.NativeText) for k in action.shortcuts()]
            if keys and not action.isSeparator():
                rows.append((path, action.text().replace("&", "").rstrip("…"), ", ".join(keys)))

    for top in window.menuBar().actions():
        menu = top.menu()
        if isinstance(menu, QMenu):
            walk(menu, top.text().replace("&", ""))
    return rows


def _dialog(parent: QWidget, title: str, body: QWidget) -> QDialog:
    dialog = QDialog(parent)
    dialog.setWindowTitle(title)
    layout = QVBoxLayout(dialog)
    layout.addWidget(body)
    buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
    buttons.rejected.connect(dialog.reject)
    layout.addWidget(buttons)
    dialog.finished.connect(dialog.deleteLater)
    secondary_window(dialog)
    return dialog


def shortcuts_dialog(window: QMainWindow) -> QDialog:
    rows = shortcut_rows(window)
    table = QTableWidget(len(rows), 3)
    table.setHorizontalHeaderLabels(("Menu", "Action", "Keys"))
    table.verticalHeader().setVisible(False)
    table.verticalHeader().setDefaultSectionSize(table.fontMetrics().height() + 6)
    for r, row in enumerate(rows):
        for c, text in enumerate(row):
            table.setItem(r, c, QTableWidgetItem(text))
    table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
    table.horizontalHeader().setStretchLastSection(True)
    table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
    table.setMinimumSize(480, 160)  # it scrolls on a small screen
    dialog = _dialog(window, "Keyboard shortcuts", table)
    dialog.setObjectName("ShortcutsDialog")
    # Every row in sight where the screen allows (fitted to smaller screens when shown).
    row_height = table.verticalHeader().defaultSectionSize()
    dialog.resize(640, row_height * (len(rows) + 1) + 2 * table.frameWidth() + 70)
    return dialog


def bundled_models_html() -> str:
    """The bundled repository's models, each with what it is (app.resources.BUNDLED_MODELS)."""
    rows = "".join(
        f"<li><b>{html.escape(name)}</b>: {html.escape(BUNDLED_MODELS.get(name, 'a model'))}</li>"
        for name in bundled_models()
    )
    return f"<ul>{rows}</ul>"


def about_dialog(window: QMainWindow, server: str | None) -> QDialog:
    lines = "".join(f"<tr><td>{name}</td><td><b>{value}</b></td></tr>" for name, value in versions(server))
    models = bundled_models_html()
    label = QLabel(
        "<h3>Triton Inference Viewer</h3>"
        "<p>Detections and request statistics from NVIDIA Triton Inference Server.</p>"
        f"<table cellspacing='6'>{lines}</table>"
        "<p>Apache-2.0.</p>"
        "<p>The bundled models are Google MediaPipe's networks (Apache-2.0) or pipelines of them:</p>"
        f"{models}"
    )
    label.setWordWrap(True)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    dialog = _dialog(window, "About Triton Inference Viewer", label)
    dialog.setObjectName("AboutDialog")
    return dialog


def add_help_menu(window: QMainWindow) -> tuple[QAction, QAction]:
    """The Help menu's two actions (the caller opens the dialogs: About needs the server)."""
    menu = window.menuBar().addMenu("&Help")
    shortcuts = QAction("&Keyboard shortcuts…", window)
    shortcuts.setShortcut(QKeySequence("F1"))
    about = QAction("&About…", window)
    menu.addAction(shortcuts)
    menu.addAction(about)
    return shortcuts, about


class HelpUi:
    """The Help menu on `window` and its dialogs (the last one opened is `dialog`)."""

    def __init__(
        self,
        window: QMainWindow,
        executor: Executor,
        tasks: TaskSet,
        session: Callable[[], TritonSession | None],
    ) -> None:
        """`session()`: the viewer's session now (About names its server's version)."""
        self.window, self._executor, self._session = window, executor, session
        self.shortcuts_action, self.about_action = add_help_menu(window)
        self.dialog: QDialog | None = None
        self.shortcuts_action.triggered.connect(self.show_shortcuts)
        self.about_action.triggered.connect(lambda: tasks.spawn(self.show_about(), name="about"))

    def show_shortcuts(self) -> None:
        self.dialog = shortcuts_dialog(self.window)
        self.dialog.open()

    async def show_about(self) -> None:
        session, version = self._session(), None
        if session is not None:
            endpoint = session.spec.endpoints[0]
            options = session.spec.connection
            version = await asyncio.get_running_loop().run_in_executor(
                self._executor, server_version, endpoint, options
            )
            version = f"{version} at {endpoint.url}"
        self.dialog = about_dialog(self.window, version)
        self.dialog.open()

    def close(self) -> None:
        """The dialog open, if any (closed by the user: already deleted)."""
        dialog, self.dialog = self.dialog, None
        if dialog is not None and shiboken6.isValid(dialog):
            dialog.close()
