"""The wall's controls: File > Add camera… (and in the Live menu), Live > Back to the wall
(Esc, while a stream has the focus) and Close the wall, and each tile's context menu (focus,
pause / stop, track, record, loop, remove). A single stream playing when a camera is added
becomes the wall's first tile."""

from __future__ import annotations

import functools
from concurrent.futures import Executor

from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMainWindow, QMenu

from app.ui.base.tasks import TaskSet
from app.ui.live.live_controller import LiveController
from app.ui.live.live_panel import LiveUi
from app.ui.wall.tile_actions import AskPath, add_stream_controls, ask_record_path
from app.ui.wall.wall_controller import WallController
from app.ui.wall.wall_stream import WallStream
from app.ui.widgets.camera_picker import CameraPicker


class WallUi:
    def __init__(
        self,
        window: QMainWindow,
        wall: WallController,
        live: LiveController,
        live_ui: LiveUi,
        executor: Executor,
        tasks: TaskSet,
    ) -> None:
        self.window, self.wall, self.live, self.live_ui = window, wall, live, live_ui
        self._executor, self._tasks = executor, tasks
        self.picker: CameraPicker | None = None
        self.ask_record_path: AskPath = ask_record_path  # where a tile's recording goes
        self.add_action = QAction("&Add camera…", window)
        self.add_action.setShortcut(QKeySequence("Ctrl+Shift+K"))
        self.add_action.setToolTip(
            "Another camera, video or stream beside those playing: each in a tile of the wall"
        )
        self.back_action = QAction("&Back to the wall", window)
        self.back_action.setShortcut(QKeySequence(Qt.Key.Key_Escape))
        self.back_action.setEnabled(False)
        self.back_action.setToolTip("The stream shown here goes back to its tile (Esc)")
        self.close_action = QAction("Close the &wall", window)
        self.close_action.setEnabled(False)
        self.close_action.setToolTip("Stop every stream of the wall")
        window.addAction(self.back_action)  # its shortcut works wherever the focus is in the window
        menu = live_ui.menu
        separator = next((a for a in menu.actions() if a.isSeparator()), None)
        for action in (self.add_action, self.back_action, self.close_action):
            insert_before(menu, separator, action)
        self._insert_after_stream()
        self.add_action.triggered.connect(self.ask_source)
        self.back_action.triggered.connect(wall.unfocus)
        self.close_action.triggered.connect(wall.close_all)
        wall.focus_changed.connect(self._focus_changed)
        wall.streams_changed.connect(self._streams_changed)
        live.state_changed.connect(lambda *_args: self._say_state())

    def _insert_after_stream(self) -> None:
        """File > Add camera… right after File > Open stream URL…."""
        for menu in self.window.menuBar().findChildren(QMenu):
            actions = menu.actions()
            if self.live_ui.open_stream_action in actions and menu is not self.live_ui.menu:
                index = actions.index(self.live_ui.open_stream_action)
                before = actions[index + 1] if index + 1 < len(actions) else None
                insert_before(menu, before, self.add_action)

    def _focus_changed(self, stream: WallStream | None) -> None:
        self.back_action.setEnabled(stream is not None)
        self._say_state()

    def _say_state(self) -> None:
        """The Live toolbar's state says what the wall shows (its buttons are the single view's)."""
        wall, label = self.wall, self.live_ui.toolbar.state_label
        if not wall.active:
            if label.text().startswith(" Wall:"):
                self.live_ui.toolbar.set_state(self.live.state, "")  # the single view's again
            return
        count = len(wall.streams)
        text = f" Wall: {count} stream{'s' if count != 1 else ''}"
        if wall.focused is not None:
            text += f"; {wall.focused.label} shown here (Esc: back to the wall)"
        else:
            text += " (double-click one to show it here)"
        label.setText(text)
        label.setToolTip(text.strip())

    def _streams_changed(self) -> None:
        self.close_action.setEnabled(self.wall.active)
        self._say_state()
        for stream in self.wall.streams:
            tile = stream.tile
            if tile.contextMenuPolicy() is not Qt.ContextMenuPolicy.CustomContextMenu:
                tile.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
                tile.customContextMenuRequested.connect(lambda pos, s=stream: self.tile_menu(s, pos))
                if stream.zones is not None:  # the picture's own menu (the zones') gets them too
                    stream.zones.editor.menu_hooks.append(functools.partial(self.tile_entries, stream))

    # -- adding ---------------------------------------------------------------------------------------
    def ask_source(self) -> None:
        if self.picker is not None:
            self.picker.raise_()
            return
        self.picker = picker = CameraPicker(self._executor, self._tasks, self.window)
        picker.setWindowTitle("Add a camera to the wall")
        picker.source_chosen.connect(self.add_source)
        picker.finished.connect(self._picker_closed)
        picker.open()  # window-modal, without a nested event loop

    def _picker_closed(self, _result: int) -> None:
        if self.picker is not None:
            self.picker.deleteLater()
            self.picker = None

    def add_source(self, source: object) -> WallStream | None:
        """A camera index (int), a video file or a URL (str) in a new tile. A single stream that
        plays becomes the wall's first tile (it starts again there)."""
        self.live_ui.apply_options()  # the toolbar's loop, in flight, ... for the new tiles
        live = self.live
        if not self.wall.active and live.active and live.source is not None:
            moved = live.source
            live.source = None  # (the toolbar has no single source any more)
            live.stop()
            live.release_view()
            self.wall.add(moved)
        if isinstance(source, int):
            return self.wall.add(source)
        return self.wall.add_text(str(source))

    # -- a tile's menu --------------------------------------------------------------------------------
    def tile_menu(self, stream: WallStream, pos: QPoint) -> None:
        menu = self.build_tile_menu(stream, pos)
        menu.exec(stream.tile.mapToGlobal(pos))
        menu.deleteLater()

    def build_tile_menu(self, stream: WallStream, pos: QPoint) -> QMenu:
        menu = QMenu(stream.tile)
        self.tile_entries(stream, menu)
        return menu

    def tile_entries(self, stream: WallStream, menu: QMenu) -> None:
        """The stream's entries of its tile's menus: focus (or back), pause / stop, track,
        record (tile_actions.py), loop, remove."""
        if self.wall.focused is stream:
            menu.addAction("Back to the wall (Esc)", self.wall.unfocus)
        else:
            menu.addAction("Show in the single view (double-click)", lambda: self.wall.focus(stream))
        add_stream_controls(stream, menu, self.live_ui.record_default_folder(), self.ask_record_path)
        loop = menu.addAction("Loop (video files)")
        loop.setCheckable(True)
        loop.setChecked(stream.controller.options.loop)
        loop.toggled.connect(stream.controller.set_loop)
        menu.addAction("Remove this stream", lambda: self.wall.remove(stream))


def insert_before(menu: QMenu, before: QAction | None, action: QAction) -> None:
    if before is None:
        menu.addAction(action)
    else:
        menu.insertAction(before, action)
