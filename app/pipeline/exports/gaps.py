"""What a format cannot hold of the results it is given, said once per export (the command
line's stderr, the viewer's banner): Pascal VOC and object crops hold boxes only, a YOLO line
holds a mask or keypoints but not both, and no dataset format holds a classifier's top-k
classes (JSON Lines keeps everything)."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from app.pipeline.exports.formats import ExportFormat
from app.pipeline.exports.images import ExportImage

TITLES = {
    ExportFormat.COCO: "COCO JSON",
    ExportFormat.YOLO: "YOLO labels",
    ExportFormat.VOC: "Pascal VOC",
    ExportFormat.LABELME: "labelme",
    ExportFormat.DOTA: "DOTA",
    ExportFormat.CROPS: "Object crops",
}
BOXES_ONLY = (ExportFormat.VOC, ExportFormat.CROPS, ExportFormat.DOTA)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' * (n != 1)}"


@dataclass
class Tally:
    masks: int = 0  # detections with an instance mask
    keypoints: int = 0  # detections with keypoints
    both: int = 0  # detections with a mask and keypoints
    semantic: int = 0  # images with a semantic segmentation (a class present)
    classes: int = 0  # images with a classifier's top-k


class ExportGaps:
    """`add(image)` for every image exported (any thread), then `messages(fmt)`."""

    def __init__(self) -> None:
        self.tally = Tally()
        self._lock = threading.Lock()

    def add(self, image: ExportImage) -> None:
        masks = sum(1 for d in image.detections if d.mask is not None)
        points = sum(1 for d in image.detections if d.keypoints)
        both = sum(1 for d in image.detections if d.mask is not None and d.keypoints)
        with self._lock:
            t = self.tally
            t.masks, t.keypoints, t.both = t.masks + masks, t.keypoints + points, t.both + both
            t.semantic += 1 if any(m.area for m in image.masks or ()) else 0
            t.classes += 1 if image.classes else 0

    def messages(self, fmt: ExportFormat) -> list[str]:
        """One sentence per kind of result `fmt` leaves out (none for JSON Lines)."""
        if fmt is ExportFormat.JSONL:
            return []
        with self._lock:
            t = Tally(**vars(self.tally))
        title = TITLES[ExportFormat(fmt)]
        out = []
        if fmt in BOXES_ONLY:
            lost = []
            if t.masks and fmt is ExportFormat.VOC:
                lost.append(f"the masks of {_count(t.masks, 'detection')}")
            if t.keypoints and fmt is ExportFormat.VOC:
                lost.append(f"the keypoints of {_count(t.keypoints, 'detection')}")
            if t.semantic:
                lost.append(f"the segmentation masks of {_count(t.semantic, 'image')}")
            if lost:
                out.append(
                    f"{title} holds boxes only: {', '.join(lost)} were not written "
                    "(COCO, YOLO and labelme hold them)"
                )
        elif fmt is ExportFormat.YOLO and t.both:
            out.append(
                f"a YOLO line holds a mask or keypoints, not both: the keypoints of "
                f"{_count(t.both, 'detection')} with a mask were not written (COCO and labelme hold both)"
            )
        if t.classes:
            out.append(
                f"{title} has no place for image classes: the top classes of {_count(t.classes, 'image')} "
                "were not written (JSON Lines keeps them)"
            )
        return out


def export_gaps(fmt: ExportFormat, images: list[ExportImage]) -> list[str]:
    """What an export of `images` as `fmt` leaves out, one sentence per kind."""
    gaps = ExportGaps()
    for image in images:
        gaps.add(image)
    return gaps.messages(fmt)
