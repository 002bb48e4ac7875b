"""ZonesEditor: the mouse on a picture draws and edits the lines and zones of its stream.

- Draw a line (its menu entry, then press, drag, release): from where the button went down
  to where it came up; its `in` direction is the arrow drawn across it.
- Draw a zone: a click per vertex, then a double-click or Enter closes it (Esc: cancel).
- A vertex dragged moves (the picture pans when the press is anywhere else); the context
  menu on a shape renames it, swaps a line's in and out, or deletes it; elsewhere it offers
  the drawing and what the owner adds (`menu_hooks`).

It filters the events of the view it is attached to (its viewport's mouse, the view's keys),
maps them to source pixels, and changes a `ZonesDraft`; every change that is done (a shape
closed, a vertex let go, a rename, a delete) emits `changed` once. GUI thread only.
"""

from __future__ import annotations

import enum
from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject, QPoint, Qt, Signal
from PySide6.QtGui import QContextMenuEvent, QKeyEvent, QMouseEvent
from PySide6.QtWidgets import QInputDialog, QMenu, QWidget

from app.analytics.zones_edit import Handle, Kind, ZonesDraft
from app.analytics.zones_file import Point, ZonesConfig
from app.ui.view.image_view import ImageView
from app.ui.zones.zones_item import ZonesItem

GRAB_PX = 9.0  # screen pixels around a vertex (or a line) that pick it


class Mode(enum.StrEnum):
    IDLE = "idle"
    LINE = "line"
    ZONE = "zone"


class ZonesEditor(QObject):
    changed = Signal()  # the draft changed, and that change is done (save it, count with it)
    hint = Signal(str)  # what to do next, for the status bar ("" when nothing is being drawn)

    def __init__(self, item: ZonesItem, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.item = item
        self.draft = ZonesDraft()
        self.mode = Mode.IDLE
        self.view: ImageView | None = None
        self.menu_hooks: list[Callable[[QMenu], None]] = []
        self.active = True  # False: the picture is not its stream's (e.g. a batch's image)
        self._points: list[Point] = []  # the shape being drawn
        self._pressed = False  # a line's button is down
        self._dragging: Handle | None = None
        self._dragged = False

    # -- where it works ------------------------------------------------------------------------------
    def attach(self, view: ImageView) -> None:
        if self.view is view:
            return
        self.detach()
        self.view = view
        view.viewport().installEventFilter(self)
        view.installEventFilter(self)  # (keys go to the view, not its viewport)

    def detach(self) -> None:
        view, self.view = self.view, None
        if view is not None:
            view.viewport().removeEventFilter(self)
            view.removeEventFilter(self)
        self.cancel()

    @property
    def busy(self) -> bool:
        """A shape is being drawn or a vertex dragged (a double-click is the editor's)."""
        return self.mode is not Mode.IDLE or self._dragging is not None

    def set_config(self, config: ZonesConfig) -> None:
        self.cancel()
        self.draft = ZonesDraft(config)
        self.item.set_config(config)

    # -- drawing --------------------------------------------------------------------------------------
    def start_line(self) -> None:
        self._start(Mode.LINE, "Press where the line starts, drag, release where it ends (Esc: cancel)")

    def start_zone(self) -> None:
        self._start(Mode.ZONE, "Click each corner of the zone; double-click or Enter closes it (Esc: cancel)")

    def _start(self, mode: Mode, hint: str) -> None:
        self.cancel()
        self.mode = mode
        if self.view is not None:
            self.view.viewport().setCursor(Qt.CursorShape.CrossCursor)
            self.view.setFocus()
        self.hint.emit(hint)

    def cancel(self) -> None:
        if self.mode is Mode.IDLE and not self._points and self._dragging is None:
            return
        self.mode, self._points, self._pressed, self._dragging = Mode.IDLE, [], False, None
        if self.view is not None:
            self.view.viewport().unsetCursor()
        self.item.set_draft([], None)
        self.item.set_config(self.draft.config())
        self.hint.emit("")

    def finish_zone(self) -> bool:
        """Close the zone being drawn (Enter, double-click); False when it has too few points."""
        if self.mode is not Mode.ZONE:
            return False
        name = self.draft.add_zone(self._points)
        self.cancel()
        if name is not None:
            self._commit()
        return name is not None

    # -- changes from the menu ---------------------------------------------------------------------
    def rename(self, kind: Kind, index: int, name: str) -> None:
        """ValueError (the editor unchanged) for an empty name or one already used."""
        self.draft.rename(kind, index, name)
        self._commit()

    def delete(self, kind: Kind, index: int) -> None:
        self.draft.delete(kind, index)
        self._commit()

    def swap(self, index: int) -> None:
        self.draft.swap(index)
        self._commit()

    def _commit(self) -> None:
        self.item.set_config(self.draft.config())
        self.changed.emit()

    # -- events ------------------------------------------------------------------------------------------
    def _scene_point(self, pos: QPoint) -> Point:
        assert self.view is not None
        p = self.view.mapToScene(pos)
        return p.x(), p.y()

    def _radius(self) -> float:
        assert self.view is not None
        return GRAB_PX / max(self.view.zoom_factor(), 1e-6)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        view = self.view
        if view is None or not self.active or not view.has_image():
            return False
        kind = event.type()
        if watched is view:
            if isinstance(event, QKeyEvent):
                return self._key(event, kind)
            return False
        if isinstance(event, QContextMenuEvent):
            if self.busy:
                return True
            self.context_menu(event.pos(), event.globalPos())
            return True
        if isinstance(event, QMouseEvent):
            return self._mouse(event, kind)
        return False

    def _key(self, event: QKeyEvent, kind: QEvent.Type) -> bool:
        key = event.key()
        if kind == QEvent.Type.ShortcutOverride and self.busy and key == Qt.Key.Key_Escape:
            event.accept()  # Esc cancels the drawing here, not the window's shortcut
            return True
        if kind != QEvent.Type.KeyPress:
            return False
        if key == Qt.Key.Key_Escape and self.busy:
            self.cancel()
            return True
        if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and self.mode is Mode.ZONE:
            self.finish_zone()
            return True
        return False

    def _mouse(self, event: QMouseEvent, kind: QEvent.Type) -> bool:
        p = self._scene_point(event.position().toPoint())
        left = event.button() == Qt.MouseButton.LeftButton
        if kind == QEvent.Type.MouseButtonDblClick:
            if self.mode is Mode.ZONE:
                # A user's double-click is press, release, double-click: its press added the
                # last vertex already (unless nothing pressed first).
                if not self._points or self._points[-1] != p:
                    self._points.append(p)
                self.finish_zone()
                return True
            return self.busy
        if kind == QEvent.Type.MouseButtonPress and left:
            return self._press(p)
        if kind == QEvent.Type.MouseMove:
            return self._move(p)
        if kind == QEvent.Type.MouseButtonRelease and left:
            return self._release(p)
        return self.busy

    def _press(self, p: Point) -> bool:
        if self.mode is Mode.LINE:
            self._points, self._pressed = [p], True
            self.item.set_draft(self._points, p)
            return True
        if self.mode is Mode.ZONE:
            if not self._points or self._points[-1] != p:
                self._points.append(p)
            self.item.set_draft(self._points, p)
            return True
        handle = self.draft.vertex_at(p, self._radius())
        if handle is None:
            return False  # the view pans
        self._dragging, self._dragged = handle, False
        return True

    def _move(self, p: Point) -> bool:
        if (self.mode is Mode.LINE and self._pressed) or (self.mode is Mode.ZONE and self._points):
            self.item.set_draft(self._points, p)
            return True
        if self._dragging is not None:
            if self.draft.move(self._dragging, p):
                self._dragged = True
                self.item.set_config(self.draft.config())
            return True
        return False

    def _release(self, p: Point) -> bool:
        if self.mode is Mode.LINE and self._pressed:
            name = self.draft.add_line(self._points[0], p)
            self.cancel()
            if name is not None:
                self._commit()
            return True
        if self._dragging is not None:
            dragged, self._dragging = self._dragged, None
            if dragged:
                self._commit()
            return True
        return self.mode is not Mode.IDLE

    # -- the context menu -------------------------------------------------------------------------------
    def context_menu(self, pos: QPoint, global_pos: QPoint) -> None:
        menu = self.build_menu(pos)
        menu.exec(global_pos)
        menu.deleteLater()

    def build_menu(self, pos: QPoint) -> QMenu:
        """The picture's menu at `pos` (viewport pixels): the shape there, the drawing, the
        owner's entries."""
        assert self.view is not None
        menu = QMenu(self.view)
        hit = self.draft.shape_at(self._scene_point(pos), self._radius())
        if hit is not None:
            kind, index = hit
            name = self.draft.lines[index].name if kind == "line" else self.draft.zones[index].name
            menu.addAction(f"Rename {kind} '{name}'…", lambda: self.ask_rename(kind, index))
            if kind == "line":
                menu.addAction(f"Swap in and out of '{name}'", lambda: self.swap(index))
            menu.addAction(f"Delete {kind} '{name}'", lambda: self.delete(kind, index))
            menu.addSeparator()
        menu.addAction("Draw a counting line", self.start_line)
        menu.addAction("Draw a zone", self.start_zone)
        for hook in self.menu_hooks:
            menu.addSeparator()
            hook(menu)
        return menu

    def ask_rename(self, kind: Kind, index: int) -> None:
        current = self.draft.lines[index].name if kind == "line" else self.draft.zones[index].name
        parent: QWidget | None = self.view
        name, ok = QInputDialog.getText(parent, f"Rename the {kind}", "Name:", text=current)
        if not ok:
            return
        try:
            self.rename(kind, index, name)
        except ValueError as e:
            self.hint.emit(f"Not renamed: {e}")
