"""Pairing the two results of an input (batch) and of a frame (live), and the tally."""

from __future__ import annotations

import numpy as np

from app.inference.result import Detection, InferenceResult, Status
from app.pipeline.compare import ComparedInput, CompareTally, ResultPairer, Side
from app.pipeline.compare_live import LivePairer
from app.sources.frame import Frame


def res(
    source: str, frame: int | None = None, boxes: int = 1, latency: float = 5.0, **kw: object
) -> InferenceResult:
    dets = [Detection((10.0 * i, 0.0, 10.0 * i + 8, 8.0), 0.9, 0, "x") for i in range(boxes)]
    return InferenceResult("r", Status.OK, source, frame, latency_ms=latency, detections=dets, **kw)  # type: ignore[arg-type]


def test_results_pair_by_source_and_frame_whichever_comes_first() -> None:
    pairs: list[ComparedInput] = []
    pairer = ResultPairer(pairs.append)
    pairer.add(Side.B, res("v.mp4", 1, boxes=2))
    pairer.add(Side.A, res("v.mp4", 0))
    pairer.add(Side.A, res("v.mp4", 1))
    assert len(pairs) == 1 and pairs[0].frame == 1
    assert pairs[0].match is not None and pairs[0].match.only_b == [1]
    assert pairer.waiting() == 1
    pairer.flush()
    assert len(pairs) == 2 and pairs[1].b.status is Status.CANCELLED and pairs[1].match is None
    record = pairs[1].to_record()
    assert record["matched"] == [] and record["a"]["ok"] and not record["b"]["ok"]


def test_tally_agreement_latency_and_worst_inputs() -> None:
    tally = CompareTally(started=0.0)
    pairer = ResultPairer(lambda p: tally.add(p, now=2.0))
    for i, boxes_b in enumerate([1, 3, 0]):
        pairer.add(Side.A, res(f"{i}.png", boxes=1, latency=4.0))
        pairer.add(Side.B, res(f"{i}.png", boxes=boxes_b, latency=10.0))
    summary = tally.summary()
    assert (summary["matched"], summary["only_a"], summary["only_b"]) == (2, 1, 2)
    assert summary["agreement"] == 0.4
    assert summary["a"]["p50_ms"] == 4.0 and summary["b"]["p95_ms"] == 10.0
    assert summary["a"]["throughput"] == 1.5 and summary["b"]["detections_per_image"] == round(4 / 3, 3)
    worst = tally.most_disagreement()
    assert [w.source for w in worst] == ["1.png", "2.png"] and worst[0].count == 2


def frame(index: int) -> Frame:
    return Frame(index, np.zeros((4, 4, 3), np.uint8), "cam", 0.0)


def live(index: int, f: Frame) -> InferenceResult:
    return res("cam", index, tag=f)


def test_live_pairs_wait_for_both_or_the_deadline_and_are_marked() -> None:
    pairer = LivePairer(deadline_s=0.25)
    f0, f1, f2 = frame(0), frame(1), frame(2)
    assert pairer.result(Side.A, live(0, f0), now=0.0) is None
    pair = pairer.result(Side.B, live(0, f0), now=0.1)
    assert (
        pair is not None and pair.missing is None and pair.match is not None and pair.match.agreement == 1.0
    )
    assert pairer.result(Side.A, live(1, f1), now=0.2) is None
    assert pairer.expire(now=0.3) == []
    (late,) = pairer.expire(now=0.46)
    assert late.index == 1 and late.missing is Side.B and late.b is None and late.match is None
    # B dropped frame 2: A's result need not wait for the deadline.
    assert pairer.dropped(Side.B, f2, now=0.5) is None
    dropped = pairer.result(Side.A, live(2, f2), now=0.51)
    assert dropped is not None and dropped.missing is Side.B
    assert (pairer.complete, pairer.late) == (1, 2)
    # Both dropped: nothing to show, nothing kept.
    pairer.dropped(Side.A, frame(3), now=0.6)
    assert pairer.dropped(Side.B, frame(3), now=0.6) is None and pairer.waiting == 0
    pairer.result(Side.A, live(4, frame(4)), now=0.7)
    pairer.forget_before(5)
    assert pairer.waiting == 0
