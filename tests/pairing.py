"""One-to-one matching of reference detections with the app's, for the reference tests."""

from __future__ import annotations

from collections.abc import Iterable


def matched_closest_first(pairs: Iterable[tuple[float, int, int]]) -> int:
    """How many of theirs get one of ours, each used once: (cost, theirs, ours) candidate
    pairs taken cheapest first (random weights give many near-equal detections, so the
    first fit could take another's partner)."""
    used_theirs: set[int] = set()
    used_ours: set[int] = set()
    for _cost, i, j in sorted(pairs):
        if i not in used_theirs and j not in used_ours:
            used_theirs.add(i)
            used_ours.add(j)
    return len(used_theirs)
