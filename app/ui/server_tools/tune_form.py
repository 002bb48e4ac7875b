"""The Tune window's form: the model, its current settings, and the lists to try (instances,
max batch sizes, queue delays with "off" for no dynamic batching, requests in flight,
requests per level, latency budget), filled from the model's current config."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QSpinBox,
    QWidget,
)
from superqt.utils import signals_blocked

from app.pipeline.sweep import SweepPlan
from app.pipeline.tune import TunePlan
from app.pipeline.tune_settings import (
    MAX_BATCH,
    MAX_INSTANCES,
    TrialSettings,
    default_instances,
    default_max_batches,
    default_queue_delays,
    parse_delay_list,
    parse_int_list,
)

DEFAULT_LEVELS = "1,4,16"
DEFAULT_REQUESTS = 200
MAX_LEVEL = 256


def delays_text(delays: Sequence[int | None]) -> str:
    return ",".join("off" if d is None else str(d) for d in delays)


class TuneForm(QWidget):
    model_chosen = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = QComboBox()
        self.model.setToolTip("The model to tune (the server's ready models)")
        self.current = QLabel("-")
        self.current.setWordWrap(True)
        self.instances = QLineEdit()
        self.instances.setToolTip("Instance counts to try, e.g. 1,2,4")
        self.max_batches = QLineEdit()
        self.max_batches.setToolTip(
            "max_batch_size values to try, e.g. 8,16 (0 only for a model without a batch dimension)"
        )
        self.delays = QLineEdit()
        self.delays.setToolTip(
            "Dynamic batching to try: 'off' (none) or the batcher's max queue delay in microseconds, "
            "e.g. off,0,2000"
        )
        self.levels = QLineEdit(DEFAULT_LEVELS)
        self.levels.setToolTip("Requests in flight swept on every trial, e.g. 1,4,16")
        self.requests = QSpinBox()
        self.requests.setRange(5, 100_000)
        self.requests.setValue(DEFAULT_REQUESTS)
        self.requests.setToolTip("Measured requests per level (after a short warm-up)")
        self.budget = QDoubleSpinBox()
        self.budget.setRange(0, 600_000)
        self.budget.setDecimals(1)
        self.budget.setSuffix(" ms")
        self.budget.setSpecialValueText("none (the knee)")
        self.budget.setToolTip(
            "Recommend the highest throughput whose p95 latency is within this budget; none: the best "
            "knee (where throughput stops growing while latency rises)"
        )
        self.images = QLabel()
        self.images.setWordWrap(True)

        sweep = QHBoxLayout()
        sweep.addWidget(self.levels, 1)
        sweep.addWidget(QLabel("requests per level"))
        sweep.addWidget(self.requests)
        sweep.addWidget(QLabel("latency budget"))
        sweep.addWidget(self.budget)
        server = QHBoxLayout()
        for label, field in (
            ("instances", self.instances),
            ("max batch", self.max_batches),
            ("queue delay (us)", self.delays),
        ):
            server.addWidget(QLabel(label))
            server.addWidget(field, 1)
        model_row = QHBoxLayout()
        model_row.addWidget(self.model)
        model_row.addWidget(self.current, 1)
        form = QFormLayout(self)
        form.setContentsMargins(0, 0, 0, 0)
        form.addRow("Model", model_row)
        form.addRow("Server settings to try", server)
        form.addRow("Requests in flight", sweep)
        form.addRow("Images", self.images)
        self.model.activated.connect(lambda _i: self.model_chosen.emit(self.model.currentText()))

    def set_models(self, names: Sequence[str], current: str | None) -> None:
        with signals_blocked(self.model):
            self.model.clear()
            self.model.addItems(list(names))
            if current is not None and current in names:
                self.model.setCurrentText(current)

    def chosen_model(self) -> str | None:
        return self.model.currentText() or None

    def set_current(self, settings: TrialSettings | None, note: str = "") -> None:
        """The model's settings now, and the default lists to try from them."""
        if settings is None:
            self.current.setText(note or "-")
            return
        self.current.setText(f"now: {settings.describe()}" + (f" ({note})" if note else ""))
        self.instances.setText(",".join(map(str, default_instances(settings))))
        self.max_batches.setText(",".join(map(str, default_max_batches(settings))))
        self.delays.setText(delays_text(default_queue_delays(settings)))

    def plan(self) -> TunePlan:
        """What the fields say; ValueError naming the field and the cause."""
        instances = parse_int_list(self.instances.text(), "Instances", 1, MAX_INSTANCES)
        batches = parse_int_list(self.max_batches.text(), "Max batch", 0, MAX_BATCH)
        delays = parse_delay_list(self.delays.text(), "Queue delay")
        levels = sorted(parse_int_list(self.levels.text(), "Requests in flight", 1, MAX_LEVEL))
        budget = self.budget.value() or None
        return TunePlan(
            sweep=SweepPlan(levels=tuple(levels), requests=self.requests.value()),
            instances=tuple(instances),
            max_batches=tuple(batches),
            queue_delays=tuple(delays),
            latency_budget_ms=budget,
        )

    def set_enabled(self, on: bool) -> None:
        for field in (
            self.model,
            self.instances,
            self.max_batches,
            self.delays,
            self.levels,
            self.requests,
            self.budget,
        ):
            field.setEnabled(on)
