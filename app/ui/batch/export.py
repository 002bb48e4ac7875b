"""Exports drawn with Qt: the annotated PNG (what the view shows: boxes, masks, keypoints, top-k
classes); JSON / JSON Lines records.
The dataset formats (COCO, YOLO, VOC, labelme, crops) are Qt-free: app.pipeline.exports."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence

import numpy as np
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QImage, QPainter, QPen

from app.inference.decoding.keypoints import VISIBLE_SCORE
from app.inference.masks import BinaryMask
from app.inference.result import ClassScore, Detection, InferenceResult, SemanticMask, record_line
from app.system.atomic_files import replacing
from app.ui.base.colors import class_color, detection_label, text_color_on
from app.ui.base.qimage import rgb_to_qimage, write_png
from app.ui.view.overlay_items import OverlayStyle

PathLike = str | os.PathLike[str]


def _draw_mask(painter: QPainter, mask: BinaryMask, color: QColor, opacity: float) -> None:
    crop = np.ascontiguousarray(mask.crop(), dtype=np.uint8)
    if not crop.any():
        return
    h, w = crop.shape
    # Indexed8 over the 0/1 bytes: the colour table paints them (QImage does not copy `crop`).
    image = QImage(crop.data, w, h, crop.strides[0], QImage.Format.Format_Indexed8)
    image.setColorTable([QColor(0, 0, 0, 0).rgba(), color.rgba()])
    painter.save()
    painter.setOpacity(opacity)
    painter.drawImage(QPointF(mask.left, mask.top), image)
    painter.restore()


def _draw_keypoints(
    painter: QPainter, det: Detection, skeleton: Sequence[tuple[int, int]], size: float
) -> None:
    points = det.keypoints or ()
    shown = [s >= VISIBLE_SCORE for _, _, s in points]
    color = class_color(det.class_id)
    painter.save()
    painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
    painter.setPen(QPen(color, max(1.0, size / 2)))
    for a, b in skeleton:
        if a < len(points) and b < len(points) and shown[a] and shown[b]:
            painter.drawLine(QPointF(*points[a][:2]), QPointF(*points[b][:2]))
    painter.setPen(QPen(QColor(255, 255, 255), max(1.0, size / 3)))
    painter.setBrush(color)
    for (x, y, _), visible in zip(points, shown, strict=True):
        if visible:
            painter.drawEllipse(QPointF(x, y), size, size)
    painter.restore()


def _draw_classes(
    painter: QPainter, classes: Sequence[ClassScore], metrics: QFontMetricsF, pad: float
) -> None:
    lines = [f"{c.label}  {c.score:.2f}" for c in classes]
    width = max(metrics.horizontalAdvance(t) for t in lines) + 2 * pad
    painter.fillRect(QRectF(0, 0, width, metrics.height() * len(lines) + 2 * pad), QColor(0, 0, 0, 170))
    painter.setPen(QColor(255, 255, 255))
    for i, text in enumerate(lines):
        painter.drawText(QPointF(pad, pad + i * metrics.height() + metrics.ascent()), text)


def annotate(
    image_rgb: np.ndarray,
    detections: Sequence[Detection],
    masks: Sequence[SemanticMask] | None = None,
    classes: Sequence[ClassScore] | None = None,
    style: OverlayStyle | None = None,
) -> QImage:
    """A copy of the image with what the view shows: semantic and instance masks (fills at
    the style's opacity), boxes with "label score" tags, keypoints and their skeleton, and
    the top-k classes in the top-left corner.

    Line width and font grow with the image so they stay legible on large
    photos. The stroke lies inside the box, so the box's edge pixels carry the
    class colour.
    """
    style = style or OverlayStyle()
    img = rgb_to_qimage(image_rgb).convertToFormat(QImage.Format.Format_RGB32)
    w, h = img.width(), img.height()
    pen_width = max(2, round(min(w, h) / 250))
    font = QFont()
    font.setPixelSize(max(11, round(min(w, h) / 40)))
    font.setBold(True)
    metrics = QFontMetricsF(font)
    pad = max(2.0, pen_width)

    painter = QPainter(img)
    painter.setRenderHint(QPainter.RenderHint.TextAntialiasing)
    painter.setFont(font)
    for semantic in masks or ():
        _draw_mask(painter, semantic.mask, class_color(semantic.class_id), style.mask_opacity)
    for det in detections:
        if det.mask is not None:
            _draw_mask(painter, det.mask, class_color(det.class_id), style.mask_opacity)
    for det in detections:
        color = class_color(det.class_id)
        x1, y1, x2, y2 = (float(v) for v in det.box)
        half = pen_width / 2
        pen = QPen(color, pen_width)
        pen.setJoinStyle(Qt.PenJoinStyle.MiterJoin)
        painter.setPen(pen)
        painter.setBrush(Qt.BrushStyle.NoBrush)
        painter.drawRect(
            QRectF(x1 + half, y1 + half, max(x2 - x1 - pen_width, 0), max(y2 - y1 - pen_width, 0))
        )

        text = detection_label(det.label, det.score)
        tw = metrics.horizontalAdvance(text) + 2 * pad
        th = metrics.height() + 2 * pad
        top = y1 - th if y1 - th >= 0 else y1  # above the box, inside when no room
        left = min(max(x1, 0.0), max(w - tw, 0.0))
        tag = QRectF(left, top, tw, th)
        painter.fillRect(tag, color)
        painter.setPen(text_color_on(color))
        painter.drawText(QPointF(tag.left() + pad, tag.top() + pad + metrics.ascent()), text)
        if det.keypoints:
            _draw_keypoints(painter, det, style.skeleton, pen_width * 1.5)
    if classes:
        _draw_classes(painter, classes, metrics, pad)
    painter.end()
    return img


def save_annotated_png(
    path: PathLike,
    image_rgb: np.ndarray,
    detections: Sequence[Detection],
    masks: Sequence[SemanticMask] | None = None,
    classes: Sequence[ClassScore] | None = None,
    style: OverlayStyle | None = None,
) -> None:
    write_png(path, annotate(image_rgb, detections, masks, classes, style))


def result_json(result: InferenceResult, indent: int | None = 2) -> str:
    """The JSON text of one result (the JSONL record of DESIGN.md)."""
    return json.dumps(result.to_record(), indent=indent, ensure_ascii=False)


def write_jsonl(path: PathLike, results: Iterable[InferenceResult]) -> int:
    """One compact record per line, exactly as `python -m app infer` writes them (names that
    are not valid UTF-8 escaped); returns how many were written."""
    n = 0
    with replacing(path) as f:
        for result in results:
            f.write(record_line(result.to_record(), "utf-8"))
            n += 1
    return n
