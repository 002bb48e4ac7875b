"""The class palette and drawing detections into an RGB array (recordings), Qt-free.

The view and the PNG export (app/ui) use the same palette and label text."""

from __future__ import annotations

from collections.abc import Sequence

import cv2
import numpy as np

from app.inference.decoding.keypoints import VISIBLE_SCORE
from app.inference.result import ClassScore, Detection, SemanticMask

# 20 distinct colours (Tableau 20, darker/lighter interleaved so neighbouring
# class ids differ strongly); a class id always maps to the same colour.
PALETTE: tuple[tuple[int, int, int], ...] = (
    (31, 119, 180),
    (255, 127, 14),
    (44, 160, 44),
    (214, 39, 40),
    (148, 103, 189),
    (140, 86, 75),
    (227, 119, 194),
    (127, 127, 127),
    (188, 189, 34),
    (23, 190, 207),
    (174, 199, 232),
    (255, 187, 120),
    (152, 223, 138),
    (255, 152, 150),
    (197, 176, 213),
    (196, 156, 148),
    (247, 182, 210),
    (199, 199, 199),
    (219, 219, 141),
    (158, 218, 229),
)


def class_rgb(class_id: int) -> tuple[int, int, int]:
    """The palette colour of a class id (negative ids wrap too)."""
    return PALETTE[class_id % len(PALETTE)]


def detection_label(label: str, score: float) -> str:
    """The text drawn next to a box, e.g. "face 0.93"."""
    return f"{label} {score:.2f}"


def annotate_rgb(
    image: np.ndarray,
    detections: Sequence[Detection],
    masks: Sequence[SemanticMask] = (),
    classes: Sequence[ClassScore] = (),
) -> np.ndarray:
    """A copy of `image` with the semantic and instance masks (half opaque), boxes, labels,
    keypoints and the top classes drawn in (what a recording shows)."""
    out = np.array(image, copy=True)
    for semantic in masks:
        if semantic.area:
            x1, y1, x2, y2 = semantic.mask.bbox()
            region, pixels = out[y1:y2, x1:x2], semantic.mask.crop()
            fill = np.array(class_rgb(semantic.class_id), np.uint16)
            region[pixels] = ((region[pixels].astype(np.uint16) + fill) // 2).astype(np.uint8)
    for i, cls in enumerate(classes):
        text = detection_label(cls.label, cls.score)
        cv2.putText(out, text, (8, 22 + 20 * i), cv2.FONT_HERSHEY_SIMPLEX, 0.6, (0, 0, 0), 3, cv2.LINE_AA)
        cv2.putText(
            out, text, (8, 22 + 20 * i), cv2.FONT_HERSHEY_SIMPLEX, 0.6, (255, 255, 255), 1, cv2.LINE_AA
        )
    for det in detections:
        if det.mask is not None and det.mask.area:
            x1, y1, x2, y2 = det.mask.bbox()
            region, pixels = out[y1:y2, x1:x2], det.mask.crop()
            fill = np.array(class_rgb(det.class_id), np.uint16)
            region[pixels] = ((region[pixels].astype(np.uint16) + fill) // 2).astype(np.uint8)
    for det in detections:
        x1, y1, x2, y2 = (round(float(v)) for v in det.box)
        color = class_rgb(det.class_id)
        cv2.rectangle(out, (x1, y1), (x2 - 1, y2 - 1), color, 2)
        text = detection_label(det.label, det.score)
        (tw, th), base = cv2.getTextSize(text, cv2.FONT_HERSHEY_SIMPLEX, 0.5, 1)
        top = y1 - th - base - 4 if y1 - th - base - 4 >= 0 else y1
        cv2.rectangle(out, (x1, top), (x1 + tw + 6, top + th + base + 4), color, -1)
        cv2.putText(
            out, text, (x1 + 3, top + th + 2), cv2.FONT_HERSHEY_SIMPLEX, 0.5, (0, 0, 0), 1, cv2.LINE_AA
        )
        for x, y, score in det.keypoints or ():
            if score >= VISIBLE_SCORE:
                cv2.circle(out, (round(x), round(y)), 3, color, -1, cv2.LINE_AA)
    return out
