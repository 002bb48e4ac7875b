"""Server and model panel: URL(s), connection state, model list, the model's details."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)
from superqt.utils import signals_blocked

from app.inference.introspection.discovery import ModelInfo
from app.inference.profiles.task_summary import task_summary
from app.inference.transports.transport import TransportKind
from app.model_states import ModelEntry
from app.pipeline.connection.state import ConnectionState
from app.ui.widgets.banner import split_detail
from app.ui.widgets.elided_label import ElidedTailLabel

LOCAL_SERVER = "(local server)"
TRANSPORT_CHOICES = (
    ("Automatic", TransportKind.AUTO),
    ("In the messages", TransportKind.GRPC),
    ("Shared memory", TransportKind.SHM),
)
STATE_COLORS = {
    ConnectionState.CONNECTED: "#2e7d32",
    ConnectionState.DISCONNECTED: "#c62828",
    ConnectionState.FAILED: "#c62828",
    ConnectionState.STARTING: "#b26a00",
    ConnectionState.CONNECTING: "#b26a00",
}


def parse_urls(text: str) -> list[str]:
    """ "a:8001, b:8001" -> ["a:8001", "b:8001"] (commas or spaces separate servers)."""
    return [u for u in text.replace(",", " ").split() if u]


def describe_model(info: ModelInfo) -> str:
    """Inputs/outputs, batching and the detected profile, as a few readable lines."""
    p = info.profile
    lines = [f"{info.name} v{info.version or '?'} ({info.platform or 'unknown platform'})"]
    for kind, tensors in (("in", info.inputs), ("out", info.outputs)):
        for t in tensors:
            # Metadata JSON carries int64 dims as strings: show them as numbers.
            shape = ", ".join(str(d) for d in t.get("shape", []))
            lines.append(f"  {kind}: {t.get('name')} {t.get('datatype')} [{shape}]")
    if info.config_known:
        batching = "dynamic batching" if info.dynamic_batching is not None else "no dynamic batching"
        instances = sum(int(g.get("count", 1)) for g in info.instance_groups) or 1
        lines.append(f"max batch {info.max_batch_size}, {batching}, {instances} instance(s)")
    else:
        lines.append("no model configuration from this server: profile from the metadata alone")
    size = "any size" if p.input_size is None else f"{p.input_size[1]}x{p.input_size[0]}"
    if p.input_size is not None and p.input_size_source:
        size += f" (from {p.input_size_source})"
    lines.append(
        f"profile: {p.output_format}, {p.preprocess} {size}, {p.input_dtype} {p.input_layout} "
        f"{p.channel_order}, boxes in {p.boxes_in} pixels"
    )
    if p.layout_reason:
        lines.append(f"layout: {p.layout_reason}")
    lines.append(task_summary(p))
    labels = ", ".join(p.labels[:8]) + (" …" if len(p.labels) > 8 else "")
    lines.append(f"labels: {labels or '(class N)'}")
    lines.append(f"thresholds: score {p.score_threshold:.2f}, IoU {p.iou_threshold:.2f}")
    return "\n".join(lines)


class ServerPanel(QWidget):
    """Emits `connect_requested(urls)` ([] = the local embedded server) and `model_chosen(name)`."""

    connect_requested = Signal(list)
    model_chosen = Signal(str)
    transport_chosen = Signal(object, int)  # TransportKind, client batch (1: off)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.url_combo = QComboBox()
        self.url_combo.setEditable(True)
        self.url_combo.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        self.url_combo.setToolTip(
            "Server address(es), separated by commas: HOST:PORT or grpc://HOST:PORT for gRPC "
            "(Triton's port 8001), http://HOST:PORT or https://HOST:PORT for HTTP/REST (Triton's "
            f"port 8000; any KServe v2 server, e.g. MLServer); {LOCAL_SERVER} starts the bundled server"
        )
        self.connect_button = QPushButton("Connect")
        # One line, elided (the whole message in its tooltip): a long state never wraps and
        # moves the Model box under the mouse.
        self.state_label = ElidedTailLabel()
        self.busy = QProgressBar()
        self.busy.setRange(0, 0)  # indeterminate: a moving busy indicator
        self.busy.setMaximumHeight(8)
        self.busy.setTextVisible(False)
        self.busy.hide()
        self.model_combo = QComboBox()
        self._models: list[ModelEntry] = []
        self._stages: dict[str, str] = {}  # {stage model: its pipeline} (set_stages)
        self.model_combo.setToolTip("Models on the server and their state; choose one to switch")
        self.transport_combo = QComboBox()
        for text, kind in TRANSPORT_CHOICES:
            self.transport_combo.addItem(text, kind)
        self.transport_combo.setToolTip(
            "How images travel to the server. Automatic: shared memory when the server is on "
            "this machine and has Triton's shared-memory extension (no copy through the network "
            "stack), else inside the messages (gRPC or HTTP, as the address says)"
        )
        self.client_batch = QSpinBox()
        self.client_batch.setRange(1, 64)
        self.client_batch.setSpecialValueText("off")
        self.client_batch.setToolTip(
            "Client-side batching: up to N images of one size in one request (models that batch); "
            "off sends each image alone"
        )
        self.transport_label = QLabel()
        self.transport_label.setWordWrap(True)
        self.details = QPlainTextEdit()
        self.details.setReadOnly(True)
        # Wrapped (no sideways scroll bar) and small: on a laptop screen the tabs below need
        # the room (it scrolls).
        self.details.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.details.setMinimumHeight(self.fontMetrics().height() * 2 + 2 * self.details.frameWidth() + 8)
        self.details.setMaximumHeight(self.fontMetrics().height() * 6)

        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.url_combo, 1)
        row.addWidget(self.connect_button)
        form = QFormLayout()
        form.setContentsMargins(0, 0, 0, 0)
        form.addRow("Server", row)
        form.addRow("State", self.state_label)
        form.addRow("", self.busy)
        form.addRow("Model", self.model_combo)
        speed = QHBoxLayout()
        speed.setContentsMargins(0, 0, 0, 0)
        speed.addWidget(self.transport_combo, 1)
        speed.addWidget(QLabel("client batch"))
        speed.addWidget(self.client_batch)
        form.addRow("Transport", speed)
        form.addRow("", self.transport_label)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(form)
        layout.addWidget(self.details)

        self.connect_button.clicked.connect(self._on_connect)
        line_edit = self.url_combo.lineEdit()
        if line_edit is not None:
            line_edit.returnPressed.connect(self._on_connect)
        self.model_combo.activated.connect(self._on_model_activated)
        self.transport_combo.activated.connect(self._on_transport_changed)
        self.client_batch.editingFinished.connect(self._on_transport_changed)
        self.set_state(ConnectionState.IDLE, "not connected")

    def set_recent(self, urls: list[str], current: str) -> None:
        self.url_combo.clear()
        items = [current] + [u for u in [LOCAL_SERVER, *urls] if u != current]
        self.url_combo.addItems(items)
        self.url_combo.setCurrentIndex(0)

    def set_transport(self, kind: TransportKind, client_batch: int) -> None:
        """The choice shown (no signal)."""
        index = self.transport_combo.findData(kind)
        self.transport_combo.setCurrentIndex(max(index, 0))
        with signals_blocked(self.client_batch):
            self.client_batch.setValue(client_batch)
        self._transport_choice = (kind, client_batch)

    def transport_choice(self) -> tuple[TransportKind, int]:
        return TransportKind(self.transport_combo.currentData()), self.client_batch.value()

    def set_transport_in_use(self, text: str, note: str = "") -> None:
        """What the session actually uses, and why it differs from the choice when it does."""
        self.transport_label.setText(f"in use: {text}" + (f"<br><i>{note}</i>" if note else ""))
        self.transport_label.setToolTip(note)

    def _on_transport_changed(self, *_args: object) -> None:
        choice = self.transport_choice()
        if choice != getattr(self, "_transport_choice", None):
            self._transport_choice = choice
            self.transport_chosen.emit(*choice)

    def url_text(self) -> str:
        return self.url_combo.currentText().strip()

    def set_state(self, state: ConnectionState, detail: str) -> None:
        title = state.value.capitalize()
        color = STATE_COLORS.get(state, "palette(text)")
        lead, _raw = split_detail(detail)  # the whole message (raw detail too) in the tooltip
        self.state_label.set_parts(f"<b style='color:{color}'>{title}</b> · ", f"{title} · ", lead)
        self.state_label.setToolTip(detail)
        self.busy.setVisible(state in (ConnectionState.STARTING, ConnectionState.CONNECTING))
        lost = state in (ConnectionState.DISCONNECTED, ConnectionState.FAILED)
        self.connect_button.setText("Reconnect" if lost else "Connect")
        self._state = state

    def state(self) -> ConnectionState:
        return self._state

    def state_text(self) -> str:
        """The whole State line (rich text), however much of it is shown."""
        return self.state_label.full_text()

    def set_models(self, models: list[ModelEntry], current: str | None) -> None:
        """The model list: each pipeline followed by its stages (indented, marked), so the
        models a user would pick stand apart from the parts they are made of."""
        self._models = list(models)
        names = {m.name for m in models}
        # The model in use is one the user picks, whatever else uses it (face_detector is also
        # a stage of face_mesh): never listed as a mere stage.
        stage_of = {s: p for s, p in self._stages.items() if p in names and s != current}
        by_name = sorted(models, key=lambda m: m.name)
        ordered: list[ModelEntry] = []
        for m in by_name:
            if m.name not in stage_of:
                ordered.append(m)
                ordered += [s for s in by_name if stage_of.get(s.name) == m.name]
        with signals_blocked(self.model_combo):
            self.model_combo.clear()
            for m in ordered:
                text = m.name if m.ready else f"{m.name} ({m.state or 'not loaded'})"
                pipeline = stage_of.get(m.name)
                if pipeline is not None:
                    text = f"    ↳ {text} · stage of {pipeline}"
                self.model_combo.addItem(text, m.name)
                index = self.model_combo.count() - 1
                tip = m.reason or (
                    f"A stage of the {pipeline} pipeline: {pipeline} runs it" if pipeline else ""
                )
                if tip:
                    self.model_combo.setItemData(index, tip, Qt.ItemDataRole.ToolTipRole)
                if m.name == current:
                    self.model_combo.setCurrentIndex(index)

    def set_stages(self, stages: dict[str, str]) -> None:
        """{stage model: its pipeline}: the list shown again, grouped (the choice kept)."""
        self._stages = dict(stages)
        if self._models:
            self.set_models(self._models, self.current_model())

    def current_model(self) -> str | None:
        data = self.model_combo.currentData()
        return None if data is None else str(data)

    def set_info(self, info: ModelInfo | None) -> None:
        self.details.setPlainText("" if info is None else describe_model(info))

    def _on_connect(self) -> None:
        text = self.url_text()
        self.connect_requested.emit([] if text in ("", LOCAL_SERVER) else parse_urls(text))

    def _on_model_activated(self, index: int) -> None:
        name = self.model_combo.itemData(index)
        if name:
            self.model_chosen.emit(str(name))
