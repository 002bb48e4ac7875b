"""Exports drawn with Qt: the annotated PNG (what the view shows: boxes, masks, keypoints, top-k
classes, painted from the same draw list by the same backend, app/ui/view/painter.py); JSON / JSON
Lines records. The dataset formats (COCO, YOLO, VOC, labelme, crops) are Qt-free:
app.pipeline.exports."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence

import numpy as np
from PySide6.QtGui import QImage

from app.drawing.draw_list import draw_list
from app.drawing.style import AnnotationStyle
from app.inference.result import ClassScore, Detection, InferenceResult, SemanticMask, record_line
from app.system.atomic_files import replacing
from app.ui.base.qimage import rgb_to_qimage, write_png
from app.ui.view.painter import render_rgb

PathLike = str | os.PathLike[str]


def annotate(
    image_rgb: np.ndarray,
    detections: Sequence[Detection],
    masks: Sequence[SemanticMask] | None = None,
    classes: Sequence[ClassScore] | None = None,
    style: AnnotationStyle | None = None,
) -> QImage:
    """A copy of the image with what the view shows: semantic and instance masks (fills at
    the style's opacity), boxes with "label score" tags, keypoints and their skeleton, and
    the top-k classes in the top-left corner.

    Line widths and fonts are the view's at 1:1 up to a 480-pixel short side and grow with the
    picture beyond (`picture_scale`), so they stay legible on large photos. The outline lies
    inside the box, so the box's edge pixels carry the class colour.
    """
    h, w = image_rgb.shape[:2]
    rgb = image_rgb if image_rgb.ndim == 3 else np.repeat(image_rgb[:, :, None], 3, axis=2)
    drawing = draw_list((w, h), detections, masks, classes, style)
    return rgb_to_qimage(render_rgb(rgb[:, :, :3], drawing))


def save_annotated_png(
    path: PathLike,
    image_rgb: np.ndarray,
    detections: Sequence[Detection],
    masks: Sequence[SemanticMask] | None = None,
    classes: Sequence[ClassScore] | None = None,
    style: AnnotationStyle | None = None,
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
