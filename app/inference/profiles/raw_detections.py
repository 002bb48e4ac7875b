"""What a detection decoder hands back before the boxes go to original pixels."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from app.inference.decoding.decoders import Decoded
from app.inference.decoding.letterbox import BoxTransform
from app.inference.profiles.profile_types import ModelProfile


@dataclass
class RawDetections:
    """Decoded detections in the profile's box space, with their extras."""

    decoded: Decoded
    n_classes: int | None = None  # of a raw YOLO output (for the COCO-names default)
    keypoints: np.ndarray | None = None  # (n, K, 3) where the boxes live
    coefficients: np.ndarray | None = None  # (n, nm) mask coefficients
    protos: np.ndarray | None = None  # (nm, Hm, Wm)
    rotated: np.ndarray | None = None  # (n, 5) cx, cy, w, h, angle (oriented boxes)


# One decoder per detection output format: (tensors, profile, transform, score, iou) -> raw.
RawDecoder = Callable[[list[np.ndarray], ModelProfile, BoxTransform, float, float], RawDetections]
