"""What an evaluation compares a detection with its ground truth by: COCO's IoU types."""

from __future__ import annotations

import enum


class IouType(enum.StrEnum):
    """The values are COCO's own (and the command line's `--iou-type`, the records' "iou_type")."""

    BBOX = "bbox"  # boxes
    SEGM = "segm"  # masks
    KEYPOINTS = "keypoints"  # keypoints, by OKS


IOU_TYPES = tuple(kind.value for kind in IouType)  # as the command line spells them
