"""Per-keypoint OKS sigmas (how far a keypoint may stray, relative to the object's size).

COCO's 17 person keypoints take COCO's own sigmas. Other keypoints are looked up by name:
the face detector's six landmarks take the sigma of the COCO keypoint they are most like
(eyes 0.025, nose tip 0.026 as COCO's nose, ears 0.035; the mouth centre, which COCO does
not have, 0.025 like the eyes: a small, sharply defined facial point). A name found nowhere
takes DEFAULT_SIGMA (COCO's mean sigma, 0.072: about as lenient as an average body joint).
"""

from __future__ import annotations

from collections.abc import Sequence

COCO_SIGMAS = (
    0.026, 0.025, 0.025, 0.035, 0.035, 0.079, 0.079, 0.072, 0.072,
    0.062, 0.062, 0.107, 0.107, 0.087, 0.087, 0.089, 0.089,
)  # fmt: skip
DEFAULT_SIGMA = round(sum(COCO_SIGMAS) / len(COCO_SIGMAS), 3)

_BY_WORD = (
    ("tragion", 0.035),
    ("ear", 0.035),
    ("eye", 0.025),
    ("nose", 0.026),
    ("mouth", 0.025),
    ("shoulder", 0.079),
    ("elbow", 0.072),
    ("wrist", 0.062),
    ("hip", 0.107),
    ("knee", 0.087),
    ("ankle", 0.089),
)


def sigma_for(name: str) -> float:
    lowered = name.casefold()
    for word, sigma in _BY_WORD:
        if word in lowered:
            return sigma
    return DEFAULT_SIGMA


def oks_sigmas(names: Sequence[str], count: int) -> list[float]:
    """Sigmas for `count` keypoints named `names` (may be empty: COCO's for 17, else the default)."""
    if len(names) != count:
        return list(COCO_SIGMAS) if count == len(COCO_SIGMAS) else [DEFAULT_SIGMA] * count
    return [sigma_for(name) for name in names]
