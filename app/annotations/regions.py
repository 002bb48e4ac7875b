"""A semantic segmentation as instances: one per connected region (8-connected) of each class's
mask, scored by its share of the class's pixels (largest first). Touching objects make one
instance, separate ones stay apart. What `evaluate` scores and what the exports write, so a
semantic model's export read back as ground truth matches its own results."""

from __future__ import annotations

from collections.abc import Sequence

import cv2
import numpy as np

from app.inference.masks import BinaryMask
from app.inference.result import Detection, SemanticMask


def region_instances(masks: Sequence[SemanticMask]) -> list[Detection]:
    """One detection per connected region of each class's mask (box = the region's, mask = its
    pixels, score = its share of the class's pixels), largest share first."""
    found: list[Detection] = []
    for semantic in masks:
        crop = np.ascontiguousarray(semantic.mask.crop(), np.uint8)
        if not crop.size or semantic.area == 0:
            continue
        count, labels, stats, _ = cv2.connectedComponentsWithStats(crop, connectivity=8)
        for k in range(1, count):
            x, y, w, h, area = (int(v) for v in stats[k])
            region = labels[y : y + h, x : x + w] == k
            left, top = semantic.mask.left + x, semantic.mask.top + y
            mask = BinaryMask(region, left, top, semantic.mask.size)
            box = (float(left), float(top), float(left + w), float(top + h))
            found.append(Detection(box, area / semantic.area, semantic.class_id, semantic.label, mask=mask))
    found.sort(key=lambda d: -d.score)
    return found
