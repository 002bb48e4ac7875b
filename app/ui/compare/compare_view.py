"""Two models' results on the same image: side by side (two views whose zoom and pan move
together) or overlaid in one view, each model in its own colour. Matched detections are
drawn solid, those only one model found dashed and thicker; masks and keypoints come with
their detection. A semantic model's class masks are filled in its model's colour too, in both
layouts (the draw list's fills, painted by the one backend)."""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Sequence

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QPen
from PySide6.QtWidgets import QHBoxLayout, QLabel, QSplitter, QStackedWidget, QVBoxLayout, QWidget

from app.drawing.draw_list import semantic_fill
from app.inference.result import Detection, InferenceResult, SemanticMask
from app.pipeline.compare import Side
from app.pipeline.matching import Match, MatchKind
from app.ui.view.detection_items import BOX_PEN_WIDTH, DetectionItem
from app.ui.view.image_view import ImageView
from app.ui.view.overlay_items import MaskItem
from app.ui.widgets.elided_label import ElidedLabel

SIDE_COLORS = {Side.A: QColor(30, 144, 255), Side.B: QColor(255, 140, 0)}  # blue, orange
ONLY_PEN_WIDTH = BOX_PEN_WIDTH + 1.5


class Layout(enum.StrEnum):
    SIDE_BY_SIDE = "side by side"
    OVERLAY = "overlay"


@dataclasses.dataclass(frozen=True)
class Drawn:
    """What a view shows of one detection (for the tests and the legend)."""

    side: Side
    index: int
    matched: bool


def compare_item(
    detection: Detection, side: Side, matched: bool, picture: tuple[int, int] | None = None
) -> DetectionItem:
    """A detection in its model's colour: solid when the other model has it too, else dashed."""
    shown = dataclasses.replace(detection, label=f"{side.upper()} {detection.label}")
    item = DetectionItem(shown, color=SIDE_COLORS[side], picture=picture)
    pen = QPen(SIDE_COLORS[side], BOX_PEN_WIDTH if matched else ONLY_PEN_WIDTH)
    pen.setCosmetic(True)
    pen.setStyle(Qt.PenStyle.SolidLine if matched else Qt.PenStyle.DashLine)
    item.setPen(pen)
    item.setZValue(1.2 if matched else 1.4)  # what differs stays on top
    matched_text = "found by both models" if matched else f"only model {side.upper()} found it"
    item.setToolTip(f"{item.toolTip()}\n{matched_text}")
    return item


def side_mask_item(semantic: SemanticMask, side: Side, view: ImageView) -> MaskItem | None:
    """A semantic class mask filled in its model's colour (None: no pixels)."""
    color = SIDE_COLORS[side]
    fill = semantic_fill(semantic, view.overlay_style(), (color.red(), color.green(), color.blue()))
    if fill is None:
        return None
    item = MaskItem(fill)
    item.setZValue(0.5)  # over the picture, under the boxes
    item.setOpacity(fill.opacity)
    item.setToolTip(f"{side.upper()} {semantic.label}: {semantic.area} px")
    return item


class _Layer:
    """The compare items one view draws (kept apart from the view's own boxes)."""

    def __init__(self, view: ImageView) -> None:
        self.view = view
        self.items: list[DetectionItem] = []
        self.drawn: list[Drawn] = []
        self.masks: list[tuple[Side, MaskItem]] = []  # semantic class masks, by model

    def set(
        self,
        entries: Sequence[tuple[Side, int, Detection, bool]],
        masks: Sequence[tuple[Side, SemanticMask]] = (),
    ) -> None:
        scene = self.view.scene()
        for item in self.items:
            scene.removeItem(item)
        for _side, old in self.masks:
            scene.removeItem(old)
        self.items, self.drawn, self.masks = [], [], []
        for side, semantic in masks:
            mask_item = side_mask_item(semantic, side, self.view)
            if mask_item is not None:
                scene.addItem(mask_item)
                self.masks.append((side, mask_item))
        scale, picture = self.view.zoom_factor(), self.view.image_size()
        for side, index, detection, matched in entries:
            item = compare_item(detection, side, matched, picture)
            item.set_view_scale(scale)
            scene.addItem(item)
            self.items.append(item)
            self.drawn.append(Drawn(side, index, matched))


class CompareView(QWidget):
    """Shows one input's two results; `set_layout()` switches side by side / overlay."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.views = {Side.A: ImageView(), Side.B: ImageView()}
        self.overlay = ImageView()
        # Long names and addresses lose whole words, never the window's room on a small screen.
        self.titles = {side: ElidedLabel() for side in Side}
        self.layers = {Side.A: _Layer(self.views[Side.A]), Side.B: _Layer(self.views[Side.B])}
        self.overlay_layer = _Layer(self.overlay)
        self.marker = QLabel()  # "B late", "B dropped this frame", errors
        self.marker.setStyleSheet("color: #c0392b; font-weight: bold")
        self._syncing = False
        self.layout_mode = Layout.SIDE_BY_SIDE

        splitter = QSplitter(Qt.Orientation.Horizontal)
        for side in Side:
            column = QWidget()
            col = QVBoxLayout(column)
            col.setContentsMargins(0, 0, 0, 0)
            color = SIDE_COLORS[side].name()
            self.titles[side].setStyleSheet(f"color: {color}; font-weight: bold")
            col.addWidget(self.titles[side])
            col.addWidget(self.views[side], 1)
            splitter.addWidget(column)
        self.stack = QStackedWidget()
        self.stack.addWidget(splitter)
        self.stack.addWidget(self.overlay)
        top = QHBoxLayout()
        self.legend = QLabel(
            f"<span style='color:{SIDE_COLORS[Side.A].name()}'>■ A</span> "
            f"<span style='color:{SIDE_COLORS[Side.B].name()}'>■ B</span> · solid: both found it · "
            "dashed: only one model"
        )
        self.legend.setWordWrap(True)
        top.addWidget(self.legend, 1)  # the room it has; wrapped only on a narrow screen
        top.addWidget(self.marker)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(top)
        layout.addWidget(self.stack, 1)
        self._link(self.views[Side.A], self.views[Side.B])
        self._link(self.views[Side.B], self.views[Side.A])

    # -- zoom and pan move together ---------------------------------------------------------
    def _link(self, source: ImageView, target: ImageView) -> None:
        source.zoom_changed.connect(lambda _scale: self._follow(source, target))
        source.horizontalScrollBar().valueChanged.connect(lambda _v: self._follow(source, target))
        source.verticalScrollBar().valueChanged.connect(lambda _v: self._follow(source, target))

    def _follow(self, source: ImageView, target: ImageView) -> None:
        if self._syncing or not (source.has_image() and target.has_image()):
            return
        self._syncing = True  # the target's own signals must not echo back
        try:
            if source.is_fit_mode():
                if not target.is_fit_mode():
                    target.fit()
            else:
                factor = source.zoom_factor() / target.zoom_factor()
                if abs(factor - 1.0) > 1e-9:
                    target.zoom_by(factor)
            target.horizontalScrollBar().setValue(source.horizontalScrollBar().value())
            target.verticalScrollBar().setValue(source.verticalScrollBar().value())
        finally:
            self._syncing = False

    # -- content ---------------------------------------------------------------------------------
    def set_layout(self, mode: Layout) -> None:
        self.layout_mode = Layout(mode)
        self.stack.setCurrentIndex(0 if self.layout_mode is Layout.SIDE_BY_SIDE else 1)

    def set_titles(self, a: str, b: str) -> None:
        for side, text in ((Side.A, f"A: {a}"), (Side.B, f"B: {b}")):
            self.titles[side].setText(text)
            self.titles[side].setToolTip(text)

    def show_pair(
        self,
        image: np.ndarray,
        a: InferenceResult | None,
        b: InferenceResult | None,
        match: Match | None,
        marker: str = "",
        detections: dict[Side, list[Detection]] | None = None,
    ) -> None:
        """Draw `image` with both results. `detections` (default: the results' own) are what
        `match` indexes into (the viewer passes the re-filtered lists it matched)."""
        results = {Side.A: a, Side.B: b}
        dets = detections or {
            side: list(r.detections) if r is not None and r.ok else [] for side, r in results.items()
        }
        matched = _matched_sets(match, dets)
        entries = {
            side: [(side, i, d, i in matched[side]) for i, d in enumerate(dets[side])] for side in Side
        }
        masks: dict[Side, list[tuple[Side, SemanticMask]]] = {}
        for side in Side:
            r = results[side]
            masks[side] = [(side, m) for m in r.masks or ()] if r is not None and r.ok else []
            classes = r.classes if r is not None and r.ok else None
            self.views[side].set_image(image, (), None, classes)
            self.layers[side].set(entries[side], masks[side])
        self.overlay.set_image(image, ())
        self.overlay_layer.set(entries[Side.A] + entries[Side.B], masks[Side.A] + masks[Side.B])
        self.marker.setText(marker)

    def clear(self) -> None:
        for view in (*self.views.values(), self.overlay):
            view.clear()
        for layer in (*self.layers.values(), self.overlay_layer):
            layer.set([])
        self.marker.setText("")

    def drawn(self) -> list[Drawn]:
        """What the current layout shows."""
        if self.layout_mode is Layout.OVERLAY:
            return list(self.overlay_layer.drawn)
        return self.layers[Side.A].drawn + self.layers[Side.B].drawn

    def drawn_masks(self) -> list[tuple[Side, MaskItem]]:
        """The semantic masks the current layout shows, by model."""
        if self.layout_mode is Layout.OVERLAY:
            return list(self.overlay_layer.masks)
        return self.layers[Side.A].masks + self.layers[Side.B].masks


def _matched_sets(match: Match | None, dets: dict[Side, list[Detection]]) -> dict[Side, set[int]]:
    if match is None or match.kind is not MatchKind.DETECTIONS:
        return {Side.A: set(), Side.B: set()}
    return {Side.A: {i for i, _, _ in match.matched}, Side.B: {j for _, j, _ in match.matched}}
