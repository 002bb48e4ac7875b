"""ImageView: an RGB image with detection boxes (and their masks and keypoints), semantic
masks and a classifier's top-k over it; wheel zoom, drag pan, fit and 1:1. What is drawn is the
draw list of app/drawing, one graphics item per shape, painted by the backend in painter.py (the
PNG export and the recorded video paint the same draw list)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
from PySide6.QtCore import QEvent, QPointF, QRectF, Qt, Signal
from PySide6.QtGui import (
    QColor,
    QImage,
    QPainter,
    QPaintEvent,
    QResizeEvent,
    QShowEvent,
    QTransform,
    QWheelEvent,
)
from PySide6.QtWidgets import QFrame, QGraphicsScene, QGraphicsView, QWidget

from app.drawing.draw_list import classes_text, semantic_fill
from app.drawing.marks import MarkShape
from app.drawing.style import AnnotationStyle
from app.inference.result import ClassScore, Detection, SemanticMask
from app.ui.view.classes_item import ClassesItem
from app.ui.view.detection_items import DetectionItem
from app.ui.view.mark_items import MarkItem
from app.ui.view.overlay_items import KeypointsItem, MaskItem, ZoomFollowingItem
from app.ui.view.picture_item import PictureItem

ZOOM_STEP = 1.25  # per wheel notch (120 eighths of a degree)
MIN_ZOOM = 0.02
MAX_ZOOM = 64.0


class ImageView(QGraphicsView):
    """Shows one image at scene coordinates = image pixels, with detections over it.

    Starts in "fit" mode (the image follows the window size); zooming or 1:1
    leaves fit mode until `fit()` is called again. A new image of the same size
    keeps the current zoom and pan (live video). The picture may have been decoded
    smaller than the image it shows (`set_image(..., size=)`): the scene stays in the
    image's own pixels, and the picture is drawn stretched over it.
    """

    zoom_changed = Signal(float)  # current scale (1.0 = one image pixel per screen pixel)
    classes_changed = Signal(list)  # the top-k ClassScore list now shown ([] when none)
    # The zoom, the viewport's size or the screen's device pixel ratio changed: how many
    # device pixels one image pixel covers (`detail_shown`) may have changed.
    detail_changed = Signal()
    painted = Signal()  # the viewport was just painted (the X-ray's "paint" stage ends here)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._scene = QGraphicsScene(self)
        self.setScene(self._scene)
        self._picture = PictureItem()
        self._picture.setZValue(0)
        self._scene.addItem(self._picture)
        self._boxes: list[DetectionItem] = []
        self._marks: list[MarkItem] = []  # labelled objects and false positives (an evaluation)
        self._detections: list[Detection] = []
        self._semantic: list[MaskItem] = []
        self._semantic_masks: list[SemanticMask] = []  # what each of _semantic draws
        self._classes_item: ClassesItem | None = None
        self._style = AnnotationStyle()
        self._image_size: tuple[int, int] | None = None  # (width, height)
        self._fit_mode = True

        self.setRenderHints(
            QPainter.RenderHint.Antialiasing
            | QPainter.RenderHint.SmoothPixmapTransform
            | QPainter.RenderHint.TextAntialiasing
        )
        self.setDragMode(QGraphicsView.DragMode.ScrollHandDrag)
        self.setTransformationAnchor(QGraphicsView.ViewportAnchor.AnchorUnderMouse)
        self.setResizeAnchor(QGraphicsView.ViewportAnchor.AnchorViewCenter)
        self.setViewportUpdateMode(QGraphicsView.ViewportUpdateMode.SmartViewportUpdate)
        self.setBackgroundBrush(QColor(40, 40, 40))
        self.setFrameShape(QFrame.Shape.NoFrame)
        # Pan by dragging; scroll bars would only steal room from the image (and
        # make "fit" oscillate as they appear and disappear).
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setMinimumSize(64, 64)
        self.zoom_changed.connect(self._on_zoom)

    # --- content -------------------------------------------------------------

    def set_image(
        self,
        image: np.ndarray,
        detections: Sequence[Detection] = (),
        masks: Sequence[SemanticMask] | None = None,
        classes: Sequence[ClassScore] | None = None,
        *,
        size: tuple[int, int] | None = None,
    ) -> None:
        """Show `image` (H, W, 3 RGB uint8, or a live frame's H, W, 4 display buffer, shown
        without a copy and kept alive while shown) and replace the boxes with `detections`
        and the semantic masks / top-k classes with `masks` / `classes` (None: none).
        `size`: the (width, height) the picture stands for when it was decoded smaller (the
        detections are in those pixels); default: its own."""
        h, w = image.shape[:2]
        new_size = size or (int(w), int(h))
        self._picture.set_picture(image, new_size)
        size_changed = new_size != self._image_size
        self._image_size = new_size
        self._scene.setSceneRect(QRectF(0, 0, *new_size))
        self.set_detections(detections)
        self.set_overlays(masks, classes)
        if size_changed:
            self._fit_mode = True  # a different picture starts fitted
        if self._fit_mode:
            self._apply_fit()

    def set_picture(self, image: np.ndarray, size: tuple[int, int]) -> None:
        """The same image decoded at another size (sharper after a zoom): the picture changes,
        nothing else does."""
        if size == self._image_size:
            self._picture.set_picture(image, size)

    def detail_shown(self) -> float:
        """Device pixels one image pixel covers now (the zoom times the device pixel ratio)."""
        return self.zoom_factor() * self.devicePixelRatioF()

    def viewport_pixels(self) -> tuple[int, int]:
        """The viewport's size in device pixels."""
        area, ratio = self.viewport().size(), self.devicePixelRatioF()
        return round(area.width() * ratio), round(area.height() * ratio)

    def set_detections(self, detections: Sequence[Detection]) -> None:
        """Replace the drawn boxes; the image stays."""
        for item in self._boxes:
            self._scene.removeItem(item)
        self._boxes = []
        self._detections = list(detections)
        scale = self.zoom_factor()
        for det in self._detections:
            item = DetectionItem(det, self._style, picture=self._image_size)
            item.setZValue(1)
            item.set_view_scale(scale)
            self._scene.addItem(item)
            self._boxes.append(item)

    def set_overlays(
        self, masks: Sequence[SemanticMask] | None, classes: Sequence[ClassScore] | None
    ) -> None:
        """Replace the semantic masks (class-coloured fills under the boxes) and the top-k
        classes (a table in the top-left corner); emits `classes_changed`."""
        for item in self._semantic:
            self._scene.removeItem(item)
        self._semantic, self._semantic_masks = [], []
        for semantic in masks or ():
            fill = semantic_fill(semantic, self._style)
            if fill is None:
                continue  # no pixels
            item = MaskItem(fill)
            item.setZValue(0.5)
            item.setOpacity(fill.opacity)
            item.setToolTip(f"{semantic.label} (class {semantic.class_id}): {semantic.area} px")
            self._scene.addItem(item)
            self._semantic.append(item)
            self._semantic_masks.append(semantic)
        if self._classes_item is not None:
            self._scene.removeItem(self._classes_item)
            self._classes_item = None
        text = classes_text(classes or (), self._style)
        if text is not None:
            self._classes_item = ClassesItem(text)
            self._classes_item.setZValue(2)
            self._scene.addItem(self._classes_item)
        self.classes_changed.emit(list(classes or ()))

    def set_mask_opacity(self, opacity: float) -> None:
        """Opacity (0..1) of every mask fill, now and for the masks drawn later."""
        self._style = dataclasses.replace(self._style, mask_opacity=min(max(opacity, 0.0), 1.0))
        for item in self.mask_items():
            item.setOpacity(self._style.mask_opacity)

    def set_keypoint_style(
        self, skeleton: Sequence[tuple[int, int]], names: Sequence[str] = (), dots: bool = True
    ) -> None:
        """The model's skeleton (0-based keypoint pairs), keypoint names and whether the points
        are drawn as dots (False: the skeleton's edges only, e.g. a face mesh's contours); redraws."""
        self._style = dataclasses.replace(
            self._style, skeleton=tuple(skeleton), keypoint_names=tuple(names), keypoint_dots=dots
        )
        self.set_detections(self._detections)

    def mask_opacity(self) -> float:
        return self._style.mask_opacity

    def overlay_style(self) -> AnnotationStyle:
        """The style the view draws with (its mask opacity and keypoint settings): the PNG export
        and the recording draw with it too."""
        return self._style

    def mask_items(self) -> list[MaskItem]:
        """Every mask fill drawn: the detections' then the semantic ones."""
        own = [b.mask_item for b in self._boxes if b.mask_item is not None]
        return own + list(self._semantic)

    def semantic_items(self) -> list[tuple[SemanticMask, MaskItem]]:
        """The semantic class masks drawn, each with its fill item (largest first as given)."""
        return list(zip(self._semantic_masks, self._semantic, strict=True))

    def keypoint_items(self) -> list[KeypointsItem]:
        return [b.keypoints_item for b in self._boxes if b.keypoints_item is not None]

    def classes_item(self) -> ClassesItem | None:
        return self._classes_item

    def _on_zoom(self, scale: float) -> None:
        # Every item drawn in screen pixels, also those others put in the scene (compare, trails).
        for item in self._scene.items():
            if isinstance(item, DetectionItem | ZoomFollowingItem) and item.parentItem() is None:
                item.set_view_scale(scale)
        self.detail_changed.emit()

    def set_marks(self, marks: Sequence[MarkShape]) -> None:
        """Replace the evaluation's marks over the picture: labelled objects (dashed) and false
        positives; the image and the model's boxes stay."""
        for item in self._marks:
            self._scene.removeItem(item)
        self._marks = []
        scale = self.zoom_factor()
        for shape in marks:
            item = MarkItem(shape, self._image_size)
            item.setZValue(1.5)  # over the model's boxes: a false positive's mark covers its outline
            item.set_view_scale(scale)
            self._scene.addItem(item)
            self._marks.append(item)

    def mark_items(self) -> list[MarkItem]:
        return list(self._marks)

    def clear(self) -> None:
        """Remove the image, every box and every overlay."""
        self.set_detections(())
        self.set_marks(())
        self.set_overlays(None, None)
        self._picture.set_picture(None)
        self._image_size = None
        self._scene.setSceneRect(QRectF())

    def has_image(self) -> bool:
        return self._image_size is not None

    def image_size(self) -> tuple[int, int] | None:
        """(width, height) of the current image, None when empty."""
        return self._image_size

    def shown_image(self) -> QImage:
        """A copy of the picture as it was handed to the scene, at its own (decoded) size (a
        null image when empty)."""
        return self._picture.image().copy()

    def box_items(self) -> list[DetectionItem]:
        """The rectangle items currently drawn (for tests and hit-testing)."""
        return list(self._boxes)

    # --- zoom ------------------------------------------------------------------

    def zoom_factor(self) -> float:
        return float(self.transform().m11())

    def is_fit_mode(self) -> bool:
        return self._fit_mode

    def fit(self) -> None:
        """Fit the whole image in the window, and keep doing so on resize."""
        self._fit_mode = True
        self._apply_fit()

    def actual_size(self) -> None:
        """1:1: one image pixel per screen pixel, centred on the view's centre."""
        self._fit_mode = False
        center = self.mapToScene(self.viewport().rect().center())
        self.setTransform(QTransform())
        self.centerOn(center)
        self.zoom_changed.emit(self.zoom_factor())

    def zoom_by(self, factor: float, anchor: QPointF | None = None) -> None:
        """Multiply the zoom by `factor`, keeping the scene point under `anchor`
        (viewport coordinates; default: the view centre) where it is."""
        if not self.has_image() or factor <= 0:
            return
        current = self.zoom_factor()
        target = min(max(current * factor, MIN_ZOOM), MAX_ZOOM)
        factor = target / current
        if abs(factor - 1.0) < 1e-9:
            return
        self._fit_mode = False
        if anchor is None:
            anchor = QPointF(self.viewport().rect().center())
        scene_anchor = self.mapToScene(anchor.toPoint())
        old_anchor = self.transformationAnchor()
        self.setTransformationAnchor(QGraphicsView.ViewportAnchor.NoAnchor)
        self.scale(factor, factor)
        self.setTransformationAnchor(old_anchor)
        # Scroll so the anchored scene point is back under the cursor (only
        # possible where the zoomed image is larger than the viewport).
        moved = self.mapFromScene(scene_anchor) - anchor.toPoint()
        hbar, vbar = self.horizontalScrollBar(), self.verticalScrollBar()
        hbar.setValue(hbar.value() + moved.x())
        vbar.setValue(vbar.value() + moved.y())
        self.zoom_changed.emit(self.zoom_factor())

    def _apply_fit(self) -> None:
        if self._image_size is None:
            return
        w, h = self._image_size
        # Not fitInView: it keeps a 2 px margin; the image should touch the edges.
        area = self.viewport().rect()
        scale = min(area.width() / max(w, 1), area.height() / max(h, 1))
        if scale <= 0:
            return
        self.setTransform(QTransform.fromScale(scale, scale))
        self.centerOn(w / 2, h / 2)
        self.zoom_changed.emit(self.zoom_factor())

    # --- events ------------------------------------------------------------------

    def wheelEvent(self, event: QWheelEvent) -> None:
        steps = event.angleDelta().y() / 120.0
        if steps == 0 or not self.has_image():
            event.ignore()
            return
        self.zoom_by(ZOOM_STEP**steps, event.position())
        event.accept()

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        if self._fit_mode:
            self._apply_fit()
        self.detail_changed.emit()

    def paintEvent(self, event: QPaintEvent) -> None:
        super().paintEvent(event)
        self.painted.emit()

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        if self._fit_mode:
            self._apply_fit()
        self.detail_changed.emit()

    def event(self, event: QEvent) -> bool:
        if event.type() == QEvent.Type.DevicePixelRatioChange:  # moved to another screen
            self.detail_changed.emit()
        return super().event(event)
