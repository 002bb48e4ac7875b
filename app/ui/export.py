"""Exports: annotated PNG (same colours as the view), JSON / JSON Lines records, COCO results."""

from __future__ import annotations

import contextlib
import json
import os
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, TextIO

import numpy as np
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QFont, QFontMetricsF, QImage, QImageWriter, QPainter, QPen

from app.inference.result import Detection, InferenceResult, record_line
from app.ui.colors import class_color, detection_label, text_color_on
from app.ui.qimage import rgb_to_qimage

PathLike = str | os.PathLike[str]


def annotate(image_rgb: np.ndarray, detections: Sequence[Detection]) -> QImage:
    """A copy of the image with boxes and "label score" tags drawn on it.

    Line width and font grow with the image so they stay legible on large
    photos. The stroke lies inside the box, so the box's edge pixels carry the
    class colour.
    """
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
    painter.end()
    return img


def save_annotated_png(path: PathLike, image_rgb: np.ndarray, detections: Sequence[Detection]) -> None:
    # QImageWriter: PNG whatever the file name's suffix (QImage.save(path, b"PNG")
    # is rejected by PySide6 6.12 at runtime although its stub declares bytes).
    writer = QImageWriter(os.fspath(path), b"png")
    if not writer.write(annotate(image_rgb, detections)):
        raise OSError(f"could not write PNG {os.fspath(path)!r}: {writer.errorString()}")


def result_json(result: InferenceResult, indent: int | None = 2) -> str:
    """The JSON text of one result (the JSONL record of DESIGN.md)."""
    return json.dumps(result.to_record(), indent=indent, ensure_ascii=False)


@contextlib.contextmanager
def replacing(path: PathLike) -> Iterator[TextIO]:
    """Write a file whole or not at all: into a temporary file beside it, renamed over `path`
    only once everything was written (a failure leaves any previous file as it was)."""
    target = os.fspath(path)
    # open(): the usual permissions (umask), unlike mkstemp's 0600.
    tmp = f"{target}.{uuid.uuid4().hex[:8]}.part"
    try:
        with open(tmp, "x", encoding="utf-8") as f:
            yield f
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_jsonl(path: PathLike, results: Iterable[InferenceResult]) -> int:
    """One compact record per line, exactly as `python -m app infer` writes them (names that
    are not valid UTF-8 escaped); returns how many were written."""
    n = 0
    with replacing(path) as f:
        for result in results:
            f.write(record_line(result.to_record(), "utf-8"))
            n += 1
    return n


def to_coco_results(
    results: Iterable[InferenceResult],
    image_ids: Mapping[str, int],
    category_ids: Mapping[int, int] | None = None,
) -> list[dict[str, Any]]:
    """COCO detection results: [{"image_id", "category_id", "bbox": [x, y, w, h], "score"}].

    Failed results contribute nothing. `category_ids` maps the model's class id to
    the dataset's category id (COCO's 80 classes use ids 1..90 with gaps); default:
    the class id itself. A successful result whose source has no image id is an
    error (KeyError): silently dropping it would skew an evaluation.
    """
    out: list[dict[str, Any]] = []
    for result in results:
        if not result.ok:
            continue
        if result.source is None or result.source not in image_ids:
            raise KeyError(f"no image id for source {result.source!r}")
        image_id = image_ids[result.source]
        for det in result.detections:
            x1, y1, x2, y2 = (float(v) for v in det.box)
            category = det.class_id if category_ids is None else category_ids[det.class_id]
            out.append(
                {
                    "image_id": image_id,
                    "category_id": int(category),
                    "bbox": [round(x1, 2), round(y1, 2), round(x2 - x1, 2), round(y2 - y1, 2)],
                    "score": round(float(det.score), 5),
                }
            )
    return out


def write_coco_results(path: PathLike, coco: list[dict[str, Any]]) -> None:
    with replacing(path) as f:
        json.dump(coco, f)
