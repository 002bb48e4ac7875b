"""StreamTile: one stream of the wall as the user sees it: its name, its model and in-flight
choice, its picture (an ImageView of its own, drawn at the tile's size) and its figures or
its error. A double-click on the picture asks for the focus (the single live view)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QFont, QMouseEvent, QResizeEvent
from PySide6.QtWidgets import QComboBox, QFrame, QGridLayout, QSizePolicy, QSpinBox, QVBoxLayout, QWidget

from app.pipeline.live import LiveState
from app.ui.view.image_view import ImageView
from app.ui.widgets.banner import split_detail
from app.ui.widgets.elided_label import ElidedLabel

MAX_IN_FLIGHT = 32
NARROW_PX = 330  # narrower than this, the model choice gets a row of its own
SESSION_MODEL = None  # the combo's first entry: whatever model the viewer's session runs
ERROR_STYLE = "color: #c62828;"
NOTE_STYLE = "color: palette(mid);"


class StreamTile(QFrame):
    """Emits `focus_requested()` (double-click on the picture), `model_chosen(name | None)`
    (None: the session's model) and `in_flight_changed(n)`."""

    focus_requested = Signal()
    model_chosen = Signal(object)
    in_flight_changed = Signal(int)

    def __init__(self, title: str, in_flight: int = 2, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("StreamTile")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Ignored)
        self.title = ElidedLabel(title)
        font = QFont(self.title.font())
        font.setBold(True)
        self.title.setFont(font)
        self.title.setToolTip(title)
        self.model = QComboBox()
        self.model.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.model.setMinimumContentsLength(8)
        self.model.setToolTip("The model this stream runs (default: the session's)")
        self.in_flight = QSpinBox()
        self.in_flight.setRange(1, MAX_IN_FLIGHT)
        self.in_flight.setValue(in_flight)
        self.in_flight.setToolTip(
            "At most this many requests in flight for this stream; frames arriving while they are "
            "all busy are dropped, so the picture never falls behind"
        )
        for control in (self.model, self.in_flight):
            control.setFocusPolicy(Qt.FocusPolicy.ClickFocus)  # (the window's first focus: not a tile's)
        self.view = ImageView()
        self.view.setMinimumSize(96, 54)
        self.figures = ElidedLabel("")
        self.figures.setToolTip("Frames shown per second · capture-to-display latency · frames dropped")
        self.message = ElidedLabel("")
        self.message.hide()
        # One row (name, model, in flight) on a wide tile; the model under them on a narrow one.
        self.header = QGridLayout()
        self.header.setContentsMargins(0, 0, 0, 0)
        self.header.setSpacing(4)
        self.header.setColumnStretch(0, 1)
        self._narrow: bool | None = None
        self._arrange(narrow=False)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(3, 3, 3, 3)
        layout.setSpacing(2)
        layout.addLayout(self.header)
        layout.addWidget(self.view, 1)
        layout.addWidget(self.message)
        layout.addWidget(self.figures)
        # Asked before a double-click focuses: False while the picture's editor uses it.
        self.accepts_focus_click: Callable[[], bool] = lambda: True
        self._models: tuple[str, ...] = ()
        self.model.activated.connect(self._model_activated)
        self.in_flight.valueChanged.connect(self.in_flight_changed)
        self.view.viewport().installEventFilter(self)

    # -- what it shows ----------------------------------------------------------------------------
    def set_models(self, names: Sequence[str], session_model: str | None, chosen: str | None) -> None:
        """The models to choose from; the first entry is the session's (`session_model`)."""
        self._models = tuple(n for n in names if n != session_model)
        self.model.blockSignals(True)
        self.model.clear()
        self.model.addItem(session_model or "session's model", SESSION_MODEL)
        self.model.setItemData(0, "The viewer's session's model (the default)", Qt.ItemDataRole.ToolTipRole)
        for name in self._models:
            self.model.addItem(name, name)
        index = self.model.findData(chosen) if chosen is not None else 0
        self.model.setCurrentIndex(max(index, 0))
        self.model.blockSignals(False)

    def chosen_model(self) -> str | None:
        data = self.model.currentData()
        return str(data) if data is not None else None

    def set_recording(self, on: bool, *, armed: bool = False) -> None:
        """A red dot before the name while this stream records (a hollow one while armed)."""
        name = self.title.toolTip()
        self.title.setText(f"● {name}" if on else f"○ {name}" if armed else name)
        self.title.setStyleSheet(ERROR_STYLE if on or armed else "")

    def set_figures(self, text: str) -> None:
        self.figures.setText(text)

    def set_state(self, state: LiveState, detail: str) -> None:
        """A failed stream shows why (in red); an ended one says so; a playing one nothing."""
        lead, _raw = split_detail(detail)
        if state is LiveState.FAILED:
            self.show_message(lead or "failed", error=True, tooltip=detail)
        elif state is LiveState.ENDED:
            self.show_message(f"Ended: {lead}" if lead else "Ended", error=False, tooltip=detail)
        elif state is LiveState.WAITING:
            self.show_message("Waiting for the server", error=False, tooltip=detail)
        elif state is LiveState.STOPPED:
            self.show_message("Stopped", error=False, tooltip=detail)
        elif state is LiveState.PLAYING:
            self.message.hide()

    def show_message(self, text: str, *, error: bool, tooltip: str = "") -> None:
        self.message.setText(text)
        self.message.setToolTip(tooltip or text)
        self.message.setStyleSheet(ERROR_STYLE if error else NOTE_STYLE)
        self.message.show()

    def message_text(self) -> str:
        """The tile's message ("" when none is shown)."""
        return self.message.text() if not self.message.isHidden() else ""

    def _arrange(self, narrow: bool) -> None:
        if narrow == self._narrow:
            return
        self._narrow = narrow
        for widget in (self.title, self.model, self.in_flight):
            self.header.removeWidget(widget)
        self.header.addWidget(self.title, 0, 0)
        self.header.addWidget(self.in_flight, 0, 2)
        if narrow:
            self.header.addWidget(self.model, 1, 0, 1, 3)
        else:
            self.header.addWidget(self.model, 0, 1)

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._arrange(narrow=event.size().width() < NARROW_PX)

    # -- input --------------------------------------------------------------------------------------
    def _model_activated(self, index: int) -> None:
        data = self.model.itemData(index)
        self.model_chosen.emit(str(data) if data is not None else None)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.MouseButtonDblClick and self.accepts_focus_click():
            self.focus_requested.emit()
            return True
        return False

    def mouseDoubleClickEvent(self, event: QMouseEvent) -> None:  # the header, the figures
        self.focus_requested.emit()
