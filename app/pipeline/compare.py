"""A/B compare: the same inputs through two sessions, results paired per input and matched.

- `ResultPairer`: the two results of an input (same source and frame) -> one `ComparedInput`
  with their `Match`, whichever arrives first; thread-safe.
- `CompareTally`: per-model latency p50/p95, throughput and detections per image, the
  agreement (matched / union) and the inputs the models disagree on most.
- `CompareBatch`: two independent `BatchJob`s (one per session, each with its own window,
  feeding thread and statistics: a slow B never holds A back) whose results are paired;
  each image is read and decoded once for both (`SharedReads`).
No Qt: `python -m app compare` and the viewer's compare window run the same code.
"""

from __future__ import annotations

import enum
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from app.inference.core.session import TritonSession
from app.inference.core.tally import LatencyWindow, StatusCounts
from app.inference.profiles.profile import input_side_needed
from app.inference.result import ErrorKind, InferenceResult, Status
from app.pipeline.batch import BatchCounts, BatchJob, VideoPolicy
from app.pipeline.matching import DEFAULT_IOU, Match, match_results
from app.pipeline.shared_reads import SharedReads, common_min_side


class Side(enum.StrEnum):
    A = "a"
    B = "b"


Key = tuple[str | None, int | None]  # (source, frame): what makes two results the same input


def key_of(result: InferenceResult) -> Key:
    return (result.source, result.frame)


@dataclass
class ComparedInput:
    """One input's two results and how they agree (match None unless both are ok)."""

    a: InferenceResult
    b: InferenceResult
    match: Match | None

    @property
    def source(self) -> str | None:
        return self.a.source if self.a.source is not None else self.b.source

    @property
    def frame(self) -> int | None:
        return self.a.frame if self.a.frame is not None else self.b.frame

    @property
    def ok(self) -> bool:
        return self.a.ok and self.b.ok

    @property
    def skipped(self) -> bool:
        return self.a.status is Status.SKIPPED and self.b.status is Status.SKIPPED

    def to_record(self) -> dict[str, Any]:
        """The `compare` JSONL record: both infer records, then the match (empty unless both ok)."""
        match = self.match.to_record() if self.match is not None else Match().to_record()
        return {
            "source": self.source,
            "frame": self.frame,
            "a": self.a.to_record(),
            "b": self.b.to_record(),
        } | match


class ResultPairer:
    """Holds the first result of each input until the other side's arrives (any thread)."""

    def __init__(self, on_pair: Callable[[ComparedInput], None], iou_threshold: float = DEFAULT_IOU) -> None:
        self._on_pair = on_pair
        self.iou_threshold = iou_threshold
        self._lock = threading.Lock()
        self._waiting: dict[Side, dict[Key, InferenceResult]] = {Side.A: {}, Side.B: {}}

    def add(self, side: Side, result: InferenceResult) -> None:
        other = Side.B if side is Side.A else Side.A
        key = key_of(result)
        with self._lock:
            partner = self._waiting[other].pop(key, None)
            if partner is None:
                self._waiting[side][key] = result
                return
        a, b = (result, partner) if side is Side.A else (partner, result)
        self._on_pair(ComparedInput(a, b, match_results(a, b, self.iou_threshold)))

    def waiting(self) -> int:
        with self._lock:
            return sum(len(w) for w in self._waiting.values())

    def flush(self, why: str = "cancelled before it was sent") -> None:
        """Pair every result still waiting with a cancelled one for the side that never
        answered (that side's job was cancelled before sending it)."""
        with self._lock:
            left = [(side, r) for side, waiting in self._waiting.items() for r in waiting.values()]
            for waiting in self._waiting.values():
                waiting.clear()
        for side, result in left:
            missing = InferenceResult.local_failure(
                result.source or "input",
                f"{result.source or 'input'}: {why}",
                frame=result.frame,
                status=Status.CANCELLED,
                kind=ErrorKind.CANCELLED,
            )
            a, b = (result, missing) if side is Side.A else (missing, result)
            self._on_pair(ComparedInput(a, b, None))


@dataclass
class SideTally:
    """One model's figures over a compare (the caller locks: CompareTally)."""

    counts: StatusCounts = field(default_factory=StatusCounts)
    latencies: LatencyWindow = field(default_factory=LatencyWindow)  # every success
    detections: int = 0
    first: float | None = None  # monotonic time of its first and last result
    last: float | None = None

    @property
    def ok(self) -> int:
        return self.counts.ok

    @property
    def failed(self) -> int:
        """Failed, timed out or cancelled."""
        return self.counts.unsuccessful

    def add(self, result: InferenceResult, now: float) -> None:
        if result.status is Status.SKIPPED:
            return
        if result.request_id is not None:
            self.first = now if self.first is None else self.first
            self.last = now
        self.counts = self.counts.add(result.status)
        if result.ok:
            self.detections += len(result.detections)
            if result.latency_ms is not None:
                self.latencies.add(result.latency_ms)

    def throughput(self, started: float) -> float:
        """Results per second from the start to its last result."""
        if self.last is None or self.last <= started:
            return 0.0
        return (self.ok + self.failed) / (self.last - started)

    def to_record(self, started: float) -> dict[str, Any]:
        p50, p95 = self.latencies.percentiles(50, 95)
        return {
            "ok": self.ok,
            "failed": self.failed,
            "p50_ms": None if p50 is None else round(p50, 3),
            "p95_ms": None if p95 is None else round(p95, 3),
            "throughput": round(self.throughput(started), 2),
            "detections_per_image": round(self.detections / self.ok, 3) if self.ok else 0.0,
        }


@dataclass(frozen=True)
class Disagreement:
    """One compared input's row in the "most disagreement" list."""

    source: str | None
    frame: int | None
    matched: int
    only_a: int
    only_b: int

    @property
    def count(self) -> int:
        return self.only_a + self.only_b

    @property
    def agreement(self) -> float:
        union = self.matched + self.count
        return self.matched / union if union else 1.0

    def to_record(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "frame": self.frame,
            "matched": self.matched,
            "only_a": self.only_a,
            "only_b": self.only_b,
            "agreement": round(self.agreement, 4),
        }


class CompareTally:
    """Figures of a compare so far; `add()` from any thread."""

    def __init__(self, started: float | None = None) -> None:
        self.started = time.monotonic() if started is None else started
        self._lock = threading.Lock()
        self.sides = {Side.A: SideTally(), Side.B: SideTally()}
        self.inputs = StatusCounts()  # compared inputs: skipped (both), ok (both) or failed
        self.matched = self.only_a = self.only_b = 0
        self.rows: list[Disagreement] = []  # one per input both models answered

    def add(self, pair: ComparedInput, now: float | None = None) -> Disagreement | None:
        """A compared input: both models' figures and their agreement."""
        now = time.monotonic() if now is None else now
        self.add_result(Side.A, pair.a, now)
        self.add_result(Side.B, pair.b, now)
        return self.add_match(pair)

    def add_result(self, side: Side, result: InferenceResult, now: float | None = None) -> None:
        """One model's result (live: every result counts, paired or not)."""
        with self._lock:
            self.sides[side].add(result, time.monotonic() if now is None else now)

    def add_match(self, pair: ComparedInput) -> Disagreement | None:
        """How the two results of an input agree (its row, None unless both are ok)."""
        status = Status.SKIPPED if pair.skipped else Status.OK if pair.ok else Status.FAILED
        with self._lock:
            self.inputs = self.inputs.add(status)
            if pair.match is None:
                return None
            m = pair.match
            self.matched += len(m.matched)
            self.only_a += len(m.only_a)
            self.only_b += len(m.only_b)
            row = Disagreement(pair.source, pair.frame, len(m.matched), len(m.only_a), len(m.only_b))
            self.rows.append(row)
            return row

    @property
    def agreement(self) -> float:
        union = self.matched + self.only_a + self.only_b
        return self.matched / union if union else 1.0

    def most_disagreement(self, n: int = 10) -> list[Disagreement]:
        with self._lock:
            rows = [r for r in self.rows if r.count]
        rows.sort(key=lambda r: (-r.count, r.agreement, str(r.source), r.frame or 0))
        return rows[:n]

    def summary(self) -> dict[str, Any]:
        with self._lock:
            return {
                "total": self.inputs.ended,
                "ok": self.inputs.ok,
                "failed": self.inputs.failed,
                "skipped": self.inputs.skipped,
                "agreement": round(self.agreement, 4),
                "matched": self.matched,
                "only_a": self.only_a,
                "only_b": self.only_b,
                "a": self.sides[Side.A].to_record(self.started),
                "b": self.sides[Side.B].to_record(self.started),
            }


class CompareBatch:
    """The same paths through two sessions as two independent batch jobs, results paired.

    `on_pair` is called once per input (on a session worker thread, or a feeding thread for
    local failures) once both of its results are in. `run()` blocks; `start()` returns.
    """

    def __init__(
        self,
        session_a: TritonSession,
        session_b: TritonSession,
        paths: Sequence[str | Path],
        on_pair: Callable[[ComparedInput], None],
        *,
        iou_threshold: float = DEFAULT_IOU,
        window: int = 8,
        videos: VideoPolicy = VideoPolicy.FRAMES,
        on_started: Callable[[int], None] | None = None,
        on_finished: Callable[[BatchCounts, BatchCounts], None] | None = None,
        on_thumbnail: Callable[[str, np.ndarray], None] | None = None,
        source_name: Callable[[Path], str] = str,
    ) -> None:
        self.pairer = ResultPairer(on_pair, iou_threshold)
        self._on_finished = on_finished
        self._lock = threading.Lock()
        self._done: set[Side] = set()
        self._finished = threading.Event()
        self.reads = SharedReads(
            Side, common_min_side(input_side_needed(s.profile) for s in (session_a, session_b))
        )

        def job(side: Side, session: TritonSession) -> BatchJob:
            return BatchJob(
                session,
                paths,
                lambda result: self.pairer.add(side, result),
                window=window,
                videos=videos,
                # Both jobs count the same inputs: A's figure is the one reported.
                on_started=on_started if side is Side.A else None,
                on_finished=lambda _counts: self._job_finished(side),
                on_thumbnail=on_thumbnail if side is Side.A else None,
                source_name=source_name,
                read_image=self.reads.reader(side),
            )

        self.jobs = {Side.A: job(Side.A, session_a), Side.B: job(Side.B, session_b)}

    def start(self) -> None:
        for job in self.jobs.values():
            job.start()

    def run(self) -> tuple[BatchCounts, BatchCounts]:
        """Run both jobs and wait for both (KeyboardInterrupt: both cancelled, re-raised)."""
        self.start()
        try:
            self._finished.wait()
        except BaseException:
            self.cancel()
            for job in self.jobs.values():
                job.wait(5.0)
            raise
        return self.counts()

    def _job_finished(self, side: Side) -> None:
        # Each job's group drained (on whichever thread handed its last result on): the
        # second one pairs what is left and finishes the compare.
        self.reads.done(side)
        with self._lock:
            self._done.add(side)
            both = len(self._done) == 2
        if not both:
            return
        self.pairer.flush()  # inputs one side never sent (cancelled): paired with a cancelled result
        self._finished.set()
        if self._on_finished is not None:
            self._on_finished(*self.counts())

    def cancel(self) -> None:
        for job in self.jobs.values():
            job.cancel()

    def wait(self, timeout: float | None = None) -> bool:
        return self._finished.wait(timeout)

    @property
    def finished(self) -> bool:
        return self._finished.is_set()

    @property
    def cancelled(self) -> bool:
        return any(job.cancelled for job in self.jobs.values())

    def counts(self) -> tuple[BatchCounts, BatchCounts]:
        return self.jobs[Side.A].counts(), self.jobs[Side.B].counts()
