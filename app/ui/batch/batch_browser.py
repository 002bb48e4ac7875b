"""BatchBrowser: moving through a batch like a labelling tool: previous / next / first / last
over the images the search and filter leave, the "n / N · file · k detections · latency"
line ("person 58 %" for a semantic model), and the strip's count marks (they follow the
threshold sliders)."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QObject, Signal
from superqt.utils import QSignalDebouncer

from app.inference.result import Detection, InferenceResult
from app.ui.batch.batch_bar import ALL, CLASS_PREFIX, FAILED, WITH_DETECTIONS, WITHOUT_DETECTIONS, BatchBar
from app.ui.batch.gallery import Gallery
from app.ui.batch.result_summary import summarize
from app.ui.state.viewer_state import Mode
from app.ui.widgets.thresholds import ThresholdsWidget

RECOUNT_DELAY_MS = 150  # slider drags: recount the marks once the slider rests


def matches(name: str, result: InferenceResult | None, labels: set[str], text: str, choice: str) -> bool:
    """Whether an image passes the search text and the filter (labels: classes it shows)."""
    if text and text.casefold() not in name.casefold():
        return False
    if choice == ALL:
        return True
    if result is None:  # no result yet: only "all images" shows it
        return False
    if choice == FAILED:
        return not result.ok
    if not result.ok:
        return False
    if choice == WITH_DETECTIONS:
        return bool(labels)
    if choice == WITHOUT_DETECTIONS:
        return not labels
    return choice.removeprefix(CLASS_PREFIX) in labels


def info_text(
    position: int, total: int, name: str, result: InferenceResult | None, shown: Sequence[Detection]
) -> str:
    """e.g. "3 / 12 · sub/photo.jpg · 2 detections · 41.2 ms", "… · person 58 % · 12.0 ms"."""
    parts = [f"{position} / {total}" if position else f"- / {total}", name, summarize(result, shown).text]
    if result is not None and result.ok and result.latency_ms is not None:
        parts.append(f"{result.latency_ms:.1f} ms")
    return " · ".join(parts)


class BatchBrowser(QObject):
    """Names are the state's: relative to the folder each entry was opened through."""

    navigated = Signal()  # the user is moving in the batch (the viewer shows the batch again)
    moved = Signal()  # ... and the new image is the current one (its actions can be updated)

    def __init__(self, gallery: Gallery, bar: BatchBar, thresholds: ThresholdsWidget) -> None:
        super().__init__()
        self.gallery, self.bar, self.strip = gallery, bar, gallery.strip
        self._labels: dict[str, set[str]] = {}  # key -> classes it shows (under the sliders)
        self.strip.namer = self.name_of
        # Debounced: a slider dragged recounts once it rests for RECOUNT_DELAY_MS.
        self._recount = QSignalDebouncer(parent=self)
        self._recount.setTimeout(RECOUNT_DELAY_MS)
        self._recount.triggered.connect(self.recount)
        bar.prev_button.clicked.connect(lambda: self.step(-1))
        bar.next_button.clicked.connect(lambda: self.step(1))
        bar.search.textChanged.connect(lambda _t: self.apply_filter())
        bar.filter.currentIndexChanged.connect(lambda _i: self.apply_filter())
        gallery.state.browsing_changed.connect(lambda _none: self._on_browsing())
        gallery.shown.connect(lambda _key: self.update_info())
        self.strip.selected.connect(lambda _key: self.update_info())
        thresholds.changed.connect(lambda *_a: self._recount.throttle())

    # -- names -----------------------------------------------------------------------------
    def name_of(self, key: str) -> str:
        return self.gallery.state.name_of(key)

    def clear(self) -> None:
        self._labels.clear()
        self.bar.search.clear()
        self.bar.reset_classes()
        self.update_info()

    # -- results -----------------------------------------------------------------------------
    def on_result(self, result: InferenceResult) -> None:
        """After the gallery took it: the strip's count mark, the class list, the filter."""
        key = result.source
        if key is None or self.strip.item_for(key) is None:
            return
        self._count(key, result)
        self._apply_one(key)
        if key == self.gallery.current_key:
            self.update_info()

    def _count(self, key: str, result: InferenceResult) -> None:
        summary = summarize(result, self.gallery.visible_detections(result) if result.ok else [])
        self._labels[key] = set(summary.labels)
        for label in sorted(summary.labels):
            self.bar.add_class(label)
        self.strip.set_count(key, summary.count if result.ok else None, summary.text)

    def recount(self) -> None:
        """The sliders moved: every mark and the filter again (no new request)."""
        for key, result in self.gallery.results.items():
            if self.strip.item_for(key) is not None:
                self._count(key, result)
        self.apply_filter()

    # -- filter ---------------------------------------------------------------------------------
    def apply_filter(self) -> None:
        for key in list(self.strip.keys()):
            self._apply_one(key)
        current = self.gallery.current_key
        visible = self.strip.visible_keys()
        # Only while the batch is shown: a recount during live video must not take the view.
        if visible and current not in visible and self.gallery.state.mode is Mode.BATCH:
            self.select(visible[0])
        self.update_info()

    def _on_browsing(self) -> None:
        """The state's subset or order changed (e.g. a confusion matrix cell was chosen)."""
        self.strip.reorder(self.gallery.state.ordered_keys())
        self.apply_filter()

    def _apply_one(self, key: str) -> None:
        text, choice = self.bar.search.text().strip(), self.bar.filter_value()
        result = self.gallery.results.get(key)
        labels = self._labels.get(key, set())
        only = self.gallery.state.only
        shown = (only is None or key in only) and matches(self.name_of(key), result, labels, text, choice)
        self.strip.set_hidden(key, not shown)

    # -- navigation -----------------------------------------------------------------------------
    def visible(self) -> list[str]:
        return self.strip.visible_keys()

    def step(self, delta: int) -> None:
        keys = self.visible()
        if not keys:
            return
        current = self.gallery.current_key
        if current in keys:
            index = min(max(keys.index(current) + delta, 0), len(keys) - 1)
        else:
            index = 0 if delta > 0 else len(keys) - 1
        self.select(keys[index])

    def first(self) -> None:
        self._select_at(0)

    def last(self) -> None:
        self._select_at(-1)

    def _select_at(self, index: int) -> None:
        keys = self.visible()
        if keys:
            self.select(keys[index])

    def select(self, key: str) -> None:
        self.navigated.emit()
        self.gallery.select(key)
        item = self.strip.item_for(key)
        if item is not None:
            self.strip.scrollToItem(item)
        self.update_info()
        self.moved.emit()

    def can_step(self, delta: int) -> bool:
        keys = self.visible()
        current = self.gallery.current_key
        if not keys:
            return False
        if current not in keys:
            return True
        index = keys.index(current) + delta
        return 0 <= index < len(keys)

    # -- the info line --------------------------------------------------------------------------
    def update_info(self) -> None:
        keys = self.visible()
        current = self.gallery.current_key
        self.bar.prev_button.setEnabled(self.can_step(-1))
        self.bar.next_button.setEnabled(self.can_step(1))
        if current is None or self.strip.item_for(current) is None:
            total = len(self.strip.keys())
            self.bar.info.setText(f"{total} image{'s' * (total != 1)}" if total else "")
            return
        position = keys.index(current) + 1 if current in keys else 0
        result = self.gallery.results.get(current)
        shown = self.gallery.visible_detections(result) if result is not None else []
        text = info_text(position, len(keys), self.name_of(current), result, shown)
        reason = self.gallery.state.only_reason
        if reason:
            text += f" · only {reason}"
        self.bar.info.setText(text)
        self.bar.info.setToolTip(f"{current}\n{text}")

    def info(self) -> str:
        return self.bar.info.text()
