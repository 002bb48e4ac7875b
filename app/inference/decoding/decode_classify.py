"""A classifier's score vector -> its top-k classes, best first."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from app.inference.decoding.labels import label_name
from app.inference.result import ClassScore


def class_scores(tensor: np.ndarray) -> np.ndarray:
    """The [C] vector of an output shaped [C], [1, C], [C, 1, 1], [1, C, 1, 1]...: exactly
    one axis may be longer than 1 (one image per request)."""
    a = np.asarray(tensor)
    long_axes = [n for n in a.shape if n != 1]
    if len(long_axes) > 1:
        raise ValueError(f"classification output {list(a.shape)}: expected one score vector per request")
    return a.reshape(-1).astype(np.float32)


def softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(initial=-np.inf))
    return e / e.sum()


def top_k(tensor: np.ndarray, labels: Sequence[str], k: int = 5, logits: bool = False) -> list[ClassScore]:
    """The k best classes (fewer when the model has fewer), highest score first; softmax
    first when the scores are logits. Non-finite scores (NaN, inf) are never a class: they
    are left out (see `non_finite_scores`), and a softmax is taken over the others."""
    scores = class_scores(tensor)
    valid = np.flatnonzero(np.isfinite(scores))
    if not valid.size:
        return []
    scores = scores[valid]
    if logits:
        scores = softmax(scores.astype(np.float64)).astype(np.float32)
    k = min(k, scores.size)
    best = np.argpartition(-scores, k - 1)[:k]
    best = best[np.argsort(-scores[best], kind="stable")]
    return [ClassScore(int(valid[i]), label_name(labels, int(valid[i])), float(scores[i])) for i in best]


def non_finite_scores(tensor: np.ndarray) -> int:
    """How many of a classifier's scores are NaN or infinite (left out by `top_k`)."""
    return int(np.count_nonzero(~np.isfinite(class_scores(tensor))))
