"""Top-level windows that fit the screen they open on, their frame (title bar, borders)
included, and secondary windows that close the way the platform closes windows.

The frame is the window manager's: on X11 its size is known only once the window is mapped
and framed (Qt learns it a few milliseconds after show(), with a Move event). So a window is
fitted when shown, with the frame of a window framed earlier as the best guess, and fitted
again once its own frame is known. Fitting keeps the window's size when it fits; otherwise
the frame is made as large as the screen's free area; then it is moved inside that area.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QMargins, QObject, QPoint, QRect, QSize, Qt, QTimer
from PySide6.QtGui import QGuiApplication, QKeySequence, QShortcut
from PySide6.QtWidgets import QDialog, QWidget

# The frame of the last window seen framed: the guess for the next one before its own is known.
_known_frame = QMargins()
FRAME_POLL_MS = 30
FRAME_POLLS = 100  # 3 s
SETTLE_MS = 300


def _real_screen() -> bool:
    # The offscreen platform's 800x800 "screen" is no screen: nothing to fit there.
    return QGuiApplication.platformName() != "offscreen"


def frame_margins(window: QWidget) -> QMargins:
    """The window manager's frame around `window` (its guess until the window is framed)."""
    handle = window.windowHandle()
    margins = handle.frameMargins() if handle is not None else QMargins()
    return margins if not margins.isNull() else _known_frame


def available_area(window: QWidget) -> QRect:
    """The free area (without panels) of the screen the window is on, or its parent's."""
    screen = window.screen() or QGuiApplication.primaryScreen()
    return screen.availableGeometry() if screen is not None else QRect()


def fit_window(window: QWidget, preferred: QSize | None = None) -> None:
    """Size `window` to `preferred` (default: its size) or less, so that with its frame it
    fits the screen's free area, and move its frame inside that area. Not on the offscreen
    platform, not when maximized or full screen (the window manager fits those)."""
    if not _real_screen() or not window.isWindow() or window.isMaximized() or window.isFullScreen():
        return
    area = available_area(window)
    if area.isEmpty():
        return
    margins = frame_margins(window)
    wanted = preferred or window.size()
    room = QSize(
        area.width() - margins.left() - margins.right(), area.height() - margins.top() - margins.bottom()
    )
    size = wanted.boundedTo(room).expandedTo(window.minimumSize().boundedTo(room))
    if size != window.size():
        window.resize(size)
    # The platform window knows where its frame is (QWidget's copy of the frame can lag).
    handle = window.windowHandle()
    corner = handle.framePosition() if handle is not None else window.pos()
    frame = QRect(corner, size.grownBy(margins))
    x = min(max(frame.left(), area.left()), area.right() + 1 - frame.width())
    y = min(max(frame.top(), area.top()), area.bottom() + 1 - frame.height())
    if (x, y) != (frame.left(), frame.top()):
        if handle is not None:
            handle.setFramePosition(QPoint(x, y))
        else:
            window.move(x, y)


class _FitOnShow(QObject):
    """One window's event filter: fit on show, and once more when its frame is known.
    Fitting only ever shrinks and moves: a window the user resized keeps its size."""

    def __init__(self, window: QWidget) -> None:
        super().__init__(window)
        self._window = window
        self._tries = 0
        # Qt is not told when the frame arrives (no event when the window itself does not
        # move): look for it a few times a second until it is there, for a while.
        self._watch = QTimer(self)
        self._watch.setInterval(FRAME_POLL_MS)
        self._watch.timeout.connect(self._look_for_frame)
        # Once more a moment later: a window manager may still apply a position it was asked
        # for before the frame existed (a restored geometry). Long before a user drags it.
        self._settle = QTimer(self)
        self._settle.setSingleShot(True)
        self._settle.setInterval(SETTLE_MS)
        self._settle.timeout.connect(lambda: fit_window(self._window))

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Show:
            fit_window(self._window)
            if _real_screen():
                self._tries = FRAME_POLLS
                self._watch.start()
        elif event.type() == QEvent.Type.Hide:
            self._watch.stop()
            self._settle.stop()
        return False

    def _look_for_frame(self) -> None:
        global _known_frame
        handle = self._window.windowHandle()
        self._tries -= 1
        if handle is not None and not handle.frameMargins().isNull():
            _known_frame = handle.frameMargins()
            self._watch.stop()
            fit_window(self._window)
            self._settle.start()
        elif self._tries <= 0:
            self._watch.stop()  # no window manager frame (or none yet): fitted as it is


def keep_on_screen(window: QWidget) -> None:
    """From now on `window` fits the screen, frame included, whenever it is shown."""
    if window.findChild(_FitOnShow, options=Qt.FindChildOption.FindDirectChildrenOnly) is None:
        window.installEventFilter(_FitOnShow(window))


def closes_with_keys(window: QWidget) -> None:
    """The platform's Close key (Ctrl+W; Ctrl+F4 on Windows; Cmd+W on macOS) and Esc close a
    secondary window (a dialog already closes on Esc: Ctrl+W is added)."""
    close = window.reject if isinstance(window, QDialog) else window.close
    keys = [QKeySequence(QKeySequence.StandardKey.Close)]
    if not isinstance(window, QDialog):
        keys.append(QKeySequence(Qt.Key.Key_Escape))
    for key in keys:
        shortcut = QShortcut(key, window)
        shortcut.setContext(Qt.ShortcutContext.WindowShortcut)
        shortcut.activated.connect(close)


def secondary_window(window: QWidget) -> QWidget:
    """A window other than the main one: fits the screen and closes with Esc / Ctrl+W."""
    keep_on_screen(window)
    closes_with_keys(window)
    return window
