"""Object crops: each detection's box cut out of its image, one PNG per detection
(`sub/photo_01_face.png`). Re-reads the images, so call it off any GUI thread."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path

import cv2
import numpy as np

from app.pipeline.exports.images import ExportImage, StemBook
from app.system.atomic_files import write_whole

_UNSAFE = re.compile(r"[^\w.-]+")


def crop_box(image: np.ndarray, box: tuple[float, float, float, float]) -> np.ndarray | None:
    """The pixels inside `box` (x2/y2 exclusive), clipped to the image; None if empty."""
    h, w = image.shape[:2]
    x1, y1, x2, y2 = (float(v) for v in box)
    left, top = max(int(np.floor(x1)), 0), max(int(np.floor(y1)), 0)
    right, bottom = min(int(np.ceil(x2)), w), min(int(np.ceil(y2)), h)
    if right <= left or bottom <= top:
        return None
    return image[top:bottom, left:right]


def write_png(path: str | Path, bgr: np.ndarray) -> Path:
    """`path` as a PNG of the BGR image, whole or not at all (OSError). Encoded in memory first:
    cv2.imwrite reports success over a file a full disk left empty."""
    encoded, png = cv2.imencode(".png", bgr)
    if not encoded:
        raise OSError(f"cannot encode {path} as PNG")
    write_whole(path, png.tobytes())
    return Path(path)


def crop_paths(folder: Path, images: Iterable[ExportImage]) -> list[tuple[ExportImage, int, Path]]:
    stems = StemBook()
    planned = []
    for image in images:
        if image.frame is not None or not image.detections:
            continue  # video frames cannot be re-read one by one
        stem = stems.claim(image.stem)
        for i, det in enumerate(image.detections, start=1):
            label = _UNSAFE.sub("_", det.label).strip("_") or f"class{det.class_id}"
            planned.append((image, i - 1, folder / f"{stem}_{i:02d}_{label}.png"))
    return planned


def write_crops(
    folder: str | Path,
    images: Iterable[ExportImage],
    read: Callable[[str], np.ndarray],
) -> int:
    """Write every detection's crop; returns how many. `read(source)` gives the RGB image."""
    folder = Path(folder)
    written = 0
    current: tuple[str, np.ndarray] | None = None
    for image, index, path in crop_paths(folder, images):
        if current is None or current[0] != image.source:
            current = (image.source, read(image.source))
        crop = crop_box(current[1], image.detections[index].box)
        if crop is None:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        write_png(path, cv2.cvtColor(np.ascontiguousarray(crop), cv2.COLOR_RGB2BGR))
        written += 1
    return written
