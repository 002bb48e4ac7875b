"""DOTA labels: one `stem.txt` per image, a line `x1 y1 x2 y2 x3 y3 x4 y4 label difficult`
per detection, in image pixels (the oriented box's corners; an axis-aligned box's corners
for a detection without one), `difficult` 0. Labels with spaces are written with `_` (DOTA
splits a line on spaces)."""

from __future__ import annotations

from app.inference.result import Detection
from app.pipeline.exports.images import ExportImage


def corners(det: Detection) -> list[tuple[float, float]]:
    """The four corners: the oriented box's, else the box's clockwise from top-left."""
    polygon = det.polygon()
    if polygon is not None:
        return polygon
    x1, y1, x2, y2 = (float(v) for v in det.box)
    return [(x1, y1), (x2, y1), (x2, y2), (x1, y2)]


def dota_text(image: ExportImage) -> str:
    lines = []
    for det in image.detections:
        points = " ".join(f"{x:.1f} {y:.1f}" for x, y in corners(det))
        label = "_".join(det.label.split()) or str(det.class_id)
        lines.append(f"{points} {label} 0\n")
    return "".join(lines)


def yolo_obb_line(det: Detection, width: int, height: int) -> str | None:
    """Ultralytics' YOLO-OBB line `class x1 y1 ... x4 y4` (normalised, clipped to 0..1) for
    an oriented box; None for a detection without one."""
    polygon = det.polygon()
    if polygon is None:
        return None
    values = " ".join(
        f"{min(max(x / width, 0.0), 1.0):.6f} {min(max(y / height, 0.0), 1.0):.6f}" for x, y in polygon
    )
    return f"{det.class_id} {values}"
