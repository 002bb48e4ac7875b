"""The report's pictures as PNG, drawn with OpenCV (no plotting library): a precision-recall
curve per class at IoU 0.5 with its operating point marked, and the confusion matrix as a
heat map with the counts in the cells."""

from __future__ import annotations

import re
from pathlib import Path

import cv2
import numpy as np

from app.evaluation.confusion import ConfusionMatrix
from app.evaluation.evaluate import Evaluation, Thresholds
from app.pipeline.exports.crops import write_png

FONT = cv2.FONT_HERSHEY_SIMPLEX
WHITE, BLACK, GREY, LIGHT = (255, 255, 255), (30, 30, 30), (120, 120, 120), (225, 225, 225)
CURVE, POINT = (200, 90, 20), (40, 40, 220)  # BGR: blue curve, red operating point
_UNSAFE = re.compile(r"[^\w.-]+")


Colour = tuple[int, int, int]


def _text(
    img: np.ndarray,
    text: str,
    org: tuple[int, int],
    scale: float = 0.45,
    color: Colour = BLACK,
    bold: int = 1,
) -> None:
    cv2.putText(img, text, org, FONT, scale, color, bold, cv2.LINE_AA)


def _text_size(text: str, scale: float = 0.45) -> tuple[int, int]:
    (w, h), _ = cv2.getTextSize(text, FONT, scale, 1)
    return w, h


def pr_curve_image(
    name: str,
    recall: np.ndarray,
    precision: np.ndarray | None,
    ap50: float | None,
    point: tuple[float | None, float | None],
    size: tuple[int, int] = (640, 480),
) -> np.ndarray:
    """BGR image of one class's PR curve; `point` (recall, precision) is the operating point."""
    w, h = size
    img = np.full((h, w, 3), 255, np.uint8)
    left, right, top, bottom = 70, w - 30, 50, h - 60

    def xy(r: float, p: float) -> tuple[int, int]:
        return round(left + r * (right - left)), round(bottom - p * (bottom - top))

    for v in np.linspace(0, 1, 6):
        cv2.line(img, xy(v, 0), xy(v, 1), LIGHT, 1)
        cv2.line(img, xy(0, v), xy(1, v), LIGHT, 1)
        label = f"{v:.1f}"
        _text(img, label, (xy(v, 0)[0] - _text_size(label)[0] // 2, bottom + 20), color=GREY)
        _text(img, label, (left - 35, xy(0, v)[1] + 5), color=GREY)
    cv2.rectangle(img, xy(0, 1), xy(1, 0), GREY, 1)
    _text(img, "recall", ((left + right) // 2 - 25, h - 15))
    _text(img, "precision", (8, top - 8))
    title = f"{name}: AP50 {ap50:.3f}" if ap50 is not None else f"{name}: no ground truth"
    _text(img, title, ((w - _text_size(title, 0.6)[0]) // 2, 28), 0.6, bold=2)
    if precision is not None:
        pts = np.array([xy(float(r), float(p)) for r, p in zip(recall, precision, strict=True)], np.int32)
        cv2.polylines(img, [pts], False, CURVE, 2, cv2.LINE_AA)
    r, p = point
    if r is not None and p is not None:
        cv2.circle(img, xy(r, p), 6, POINT, -1, cv2.LINE_AA)
        _text(
            img,
            f"P {p:.2f} R {r:.2f}",
            (xy(r, p)[0] - 110 if r > 0.6 else xy(r, p)[0] + 10, xy(r, p)[1] - 10),
            color=POINT,
        )
    return img


def confusion_image(cm: ConfusionMatrix, cell: int = 56) -> np.ndarray:
    """BGR heat map: rows the ground truth, columns the prediction; each row shaded by its share."""
    n = len(cm.labels)
    label_w = max(_text_size(label)[0] for label in cm.labels) + 16
    width, height = label_w + n * cell + 20, label_w + n * cell + 50
    img = np.full((height, width, 3), 255, np.uint8)
    x0, y0 = label_w, label_w + 30
    _text(img, "prediction ->", (x0, 20), 0.5)
    totals = cm.matrix.sum(axis=1, keepdims=True).astype(np.float64)
    share = np.divide(cm.matrix, totals, out=np.zeros(cm.matrix.shape), where=totals > 0)
    colours = cv2.applyColorMap(np.uint8(255 - share * 200).reshape(n, n, 1), cv2.COLORMAP_BONE)
    for i in range(n):
        for j in range(n):
            tl, br = (x0 + j * cell, y0 + i * cell), (x0 + (j + 1) * cell, y0 + (i + 1) * cell)
            colour = tuple(int(c) for c in colours[i, j])
            cv2.rectangle(img, tl, br, colour, -1)
            cv2.rectangle(img, tl, br, WHITE, 1)
            count = "-" if i == j == n - 1 else str(int(cm.matrix[i, j]))  # background x background
            tw, th = _text_size(count)
            text_colour = WHITE if share[i, j] > 0.5 else BLACK
            _text(img, count, (tl[0] + (cell - tw) // 2, tl[1] + (cell + th) // 2), color=text_colour)
    for k, label in enumerate(cm.labels):
        _text(img, label, (8, y0 + k * cell + cell // 2 + 5))
        tw, th = _text_size(label)
        strip = np.full((th + 8, tw + 4, 3), 255, np.uint8)
        _text(strip, label, (2, th + 2))
        rotated = np.rot90(strip)  # read bottom to top
        x = x0 + k * cell + (cell - rotated.shape[1]) // 2
        y = y0 - 8 - rotated.shape[0]
        if y >= 0:
            img[y : y + rotated.shape[0], x : x + rotated.shape[1]] = rotated
    _text(img, "ground truth", (8, y0 - 10), 0.45, GREY)
    return img


def write_plots(
    evaluation: Evaluation, folder: str | Path, prefix: str = "", thresholds: Thresholds | None = None
) -> list[Path]:
    """pr_<class>.png per class and confusion_matrix.png in `folder`, at `thresholds` (default:
    each class's best F1); returns the files written."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    point = evaluation.operating_point(thresholds)
    coco = evaluation.coco
    for k, name in enumerate(evaluation.classes.categories):
        curve = coco.pr_curve(k) if coco else None
        recall = coco.recall_thresholds if coco else np.linspace(0, 1, 101)
        _, ap50 = coco.class_ap(k) if coco else (None, None)
        c = point.classes[k]
        img = pr_curve_image(name, recall, curve, ap50, (c.recall, c.precision))
        safe = _UNSAFE.sub("_", name).strip("_") or f"class{k}"
        if any(path.name == f"{prefix}pr_{safe}.png" for path in written):
            safe = f"{safe}_{k}"  # two names alike once made safe for a file name
        written.append(_write(out / f"{prefix}pr_{safe}.png", img))
    matrix = evaluation.confusion(thresholds)
    written.append(_write(out / f"{prefix}confusion_matrix.png", confusion_image(matrix)))
    return written


def _write(path: Path, img: np.ndarray) -> Path:
    return write_png(path, img)  # whole or not at all
