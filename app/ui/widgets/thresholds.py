"""Score and IoU threshold sliders (0..1, two decimals), and the mask opacity slider. A slider
that does not apply to the model in use (score and IoU for a semantic segmentation, opacity for a
model without masks) is disabled, its tooltip saying why."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QFormLayout, QHBoxLayout, QLabel, QSlider, QWidget
from superqt.utils import signals_blocked

from app.inference.profile_kinds import Task

STEPS = 100  # slider resolution: 0.01


def why_not_applicable(model: str, task: Task) -> tuple[str | None, str | None]:
    """Why the score/IoU sliders and the opacity slider do not apply to `model` (None: they do)."""
    thresholds = masks = None
    if task is Task.SEMANTIC:
        thresholds = f"{model} is a semantic segmentation model: one mask per class, no scores or boxes"
    elif task is Task.CLASSIFY:
        thresholds = f"{model} is a classifier: it gives its top classes, no boxes"
    if task not in (Task.SEGMENT, Task.SEMANTIC):
        masks = f"{model} gives no masks"
    return thresholds, masks


class _ThresholdRow(QWidget):
    """A horizontal slider with its value shown as a number next to it."""

    def __init__(self, value: float, tooltip: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setRange(0, STEPS)
        self.slider.setSingleStep(1)
        self.slider.setPageStep(5)
        self.slider.setToolTip(tooltip)
        self.value_label = QLabel()
        self.value_label.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        self.value_label.setMinimumWidth(self.value_label.fontMetrics().horizontalAdvance("0.000"))
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.slider, 1)
        layout.addWidget(self.value_label)
        self.slider.valueChanged.connect(self._show)
        self.set_value(value)
        self._show(self.slider.value())

    def value(self) -> float:
        return self.slider.value() / STEPS

    def set_value(self, value: float) -> None:
        self.slider.setValue(round(min(max(value, 0.0), 1.0) * STEPS))

    def _show(self, _raw: int) -> None:
        self.value_label.setText(f"{self.value():.2f}")


class ThresholdsWidget(QWidget):
    """Emits `changed(score, iou)` whenever either threshold slider moves, and
    `opacity_changed(opacity)` when the mask opacity slider does (a display setting only)."""

    changed = Signal(float, float)
    opacity_changed = Signal(float)

    def __init__(
        self, score: float = 0.25, iou: float = 0.45, mask_opacity: float = 0.5, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self._score = _ThresholdRow(score, "Hide detections scoring below this value")
        self._iou = _ThresholdRow(
            iou, "Suppress a box overlapping a better box of the same class by more than this IoU"
        )
        self._opacity = _ThresholdRow(mask_opacity, "How opaque mask fills are (0: hidden, 1: solid)")
        self._form = layout = QFormLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addRow("Score ≥", self._score)
        layout.addRow("IoU (NMS)", self._iou)
        layout.addRow("Mask opacity", self._opacity)
        self._score.slider.valueChanged.connect(self._emit)
        self._iou.slider.valueChanged.connect(self._emit)
        self._opacity.slider.valueChanged.connect(lambda _v: self.opacity_changed.emit(self.mask_opacity()))
        self._tooltips: dict[_ThresholdRow, str] = {}  # each slider's own, while disabled

    def set_applicable(self, thresholds: str | None = None, masks: str | None = None) -> None:
        """None: the score and IoU sliders (`thresholds`) or the opacity slider (`masks`) apply;
        else the reason they do not, shown as their tooltip while they are disabled."""
        for row, why in ((self._score, thresholds), (self._iou, thresholds), (self._opacity, masks)):
            own = self._tooltips.setdefault(row, row.slider.toolTip())
            row.setEnabled(why is None)
            row.slider.setToolTip(own if why is None else f"Does not apply: {why}")
            row.value_label.setToolTip(row.slider.toolTip())
            label = self._form.labelForField(row)
            if label is not None:
                label.setEnabled(why is None)
                label.setToolTip(row.slider.toolTip())

    def applies(self) -> tuple[bool, bool]:
        """(the score and IoU sliders apply, the opacity slider applies)."""
        return self._score.isEnabled(), self._opacity.isEnabled()

    def score(self) -> float:
        return self._score.value()

    def iou(self) -> float:
        return self._iou.value()

    def set_values(self, score: float, iou: float) -> None:
        """Set both sliders; emits `changed` once if anything changed."""
        before = (self.score(), self.iou())
        with signals_blocked(self._score.slider, self._iou.slider):
            self._score.set_value(score)
            self._iou.set_value(iou)
        self._score._show(0)
        self._iou._show(0)
        if (self.score(), self.iou()) != before:
            self._emit()

    def shown_values(self) -> tuple[str, str]:
        """The score and IoU as the numbers next to their sliders show them (e.g. "0.60")."""
        return self._score.value_label.text(), self._iou.value_label.text()

    def mask_opacity(self) -> float:
        return self._opacity.value()

    def set_mask_opacity(self, opacity: float) -> None:
        """Emits `opacity_changed` if the value changes."""
        self._opacity.set_value(opacity)

    def opacity_slider(self) -> QSlider:
        return self._opacity.slider

    def score_slider(self) -> QSlider:
        return self._score.slider

    def iou_slider(self) -> QSlider:
        return self._iou.slider

    def _emit(self) -> None:
        self.changed.emit(self.score(), self.iou())
