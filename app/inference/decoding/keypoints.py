"""Keypoint conventions: the COCO-17 person layout, parsing `kpt_shape`/`skeleton` values,
and mapping keypoints from model-input pixels to the original image."""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np

from app.inference.decoding.letterbox import BoxTransform, input_to_original
from app.inference.profile_kinds import BoxesIn

COCO_KEYPOINT_NAMES: tuple[str, ...] = (
    "nose", "left_eye", "right_eye", "left_ear", "right_ear", "left_shoulder", "right_shoulder",
    "left_elbow", "right_elbow", "left_wrist", "right_wrist", "left_hip", "right_hip", "left_knee",
    "right_knee", "left_ankle", "right_ankle",
)  # fmt: skip
# The COCO person skeleton (as Ultralytics draws it), 0-based keypoint indices.
COCO_SKELETON: tuple[tuple[int, int], ...] = (
    (15, 13), (13, 11), (16, 14), (14, 12), (11, 12), (5, 11), (6, 12), (5, 6), (5, 7), (6, 8),
    (7, 9), (8, 10), (1, 2), (0, 1), (0, 2), (1, 3), (2, 4), (3, 5), (4, 6),
)  # fmt: skip
SKELETON_PRESETS = {"coco17": COCO_SKELETON, "coco": COCO_SKELETON, "none": ()}
# A keypoint scoring at least this is drawn and exported as visible (Ultralytics' default).
VISIBLE_SCORE = 0.5


def parse_kpt_shape(value: Any) -> tuple[int, int]:
    """[K, D] from a list or a text such as "17,3", "[17, 3]" or "17x3". ValueError if not."""
    if isinstance(value, str):
        parts = [p for p in re.split(r"[\s,x\[\]()]+", value.strip()) if p]
        try:
            value = [int(p) for p in parts]
        except ValueError:
            raise ValueError(f"kpt_shape {value!r}: expected two integers such as 17,3") from None
    if not isinstance(value, list | tuple) or len(value) != 2:
        raise ValueError(f"kpt_shape {value!r}: expected [K, D] (keypoints, 2 or 3 values each)")
    k, d = value
    if isinstance(k, bool) or isinstance(d, bool) or not isinstance(k, int) or not isinstance(d, int):
        raise ValueError(f"kpt_shape {value!r}: expected two integers")
    if k < 1 or d not in (2, 3):
        raise ValueError(f"kpt_shape {list(value)}: K must be >= 1 and D 2 (x, y) or 3 (x, y, visibility)")
    return k, d


def parse_skeleton(value: Any) -> tuple[tuple[int, int], ...]:
    """0-based index pairs from a preset name ("coco17", "none"), a list of pairs, or a text
    of pairs ("0-1, 1-2" or JSON "[[0, 1], [1, 2]]")."""
    if isinstance(value, str):
        text = value.strip()
        if text.lower() in SKELETON_PRESETS:
            return SKELETON_PRESETS[text.lower()]
        if text.startswith("["):
            try:
                value = json.loads(text)
            except json.JSONDecodeError:
                raise ValueError(f"skeleton {value!r}: not valid JSON") from None
        else:
            pairs = [p for p in re.split(r"[,;\s]+", text) if p]
            try:
                value = [[int(x) for x in p.split("-")] for p in pairs]
            except ValueError:
                raise ValueError(f"skeleton {value!r}: expected pairs such as 0-1, 1-2") from None
    if not isinstance(value, list | tuple):
        raise ValueError(f"skeleton {value!r}: expected a list of [a, b] pairs or a preset (coco17)")
    out = []
    for pair in value:
        if (
            not isinstance(pair, list | tuple)
            or len(pair) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in pair)
        ):
            raise ValueError(f"skeleton pair {pair!r}: expected two keypoint indices (0-based)")
        out.append((int(pair[0]), int(pair[1])))
    return tuple(out)


def keypoints_to_original(points: np.ndarray, transform: BoxTransform, boxes_in: BoxesIn) -> np.ndarray:
    """(N, K, 2) x, y where the profile's boxes live (model-input pixels, original pixels or
    normalised 0..1 of the model input) -> original pixels, clipped to the image."""
    p = np.array(points, dtype=np.float32).reshape(-1, 2)
    if boxes_in is BoxesIn.NORMALIZED:
        p *= np.array([transform.dst_w, transform.dst_h], np.float32)
    if boxes_in is not BoxesIn.ORIGINAL:
        p = input_to_original(p, transform)
    np.clip(p[:, 0], 0, transform.src_w, out=p[:, 0])
    np.clip(p[:, 1], 0, transform.src_h, out=p[:, 1])
    return p.reshape((*np.shape(points)[:-1], 2))
