"""`PathTracing`: the request path's calls into the session's tracer (app.inference.tracing).

Each call is a no-op for an untraced request: its `trace` is None, one attribute test and
nothing else (no lock, no allocation, no clock read beyond the path's own): tracing never
slows the requests it does not trace (tests/bench/bench_tracing.py measures it). A traced
request's recorder takes the stages the path already times (pre-processing, the wait for
the client batch, writing the tensors, the send, the reply's arrival and its hand-off to a
worker, reading and decoding the outputs, the result callback; each attempt and back-off
of a retry), and, once the request has ended, is handed to the tracer to meet the server's
side. `tracer` is set and cleared by the session (start_tracing / close).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from app.inference.tracing import spans as stage
from app.inference.tracing.tracer import RequestRecorder, Tracer
from app.inference.transports.transport import TransportKind

# How a transport's writing of the tensors is named (its `kind`).
WRITE_STAGE = {TransportKind.SHM.value: stage.SHM_WRITE}


class Traced(Protocol):
    trace: RequestRecorder | None


class PathTracing:
    def __init__(self) -> None:
        self.tracer: Tracer | None = None

    def begin(
        self,
        request_id: str,
        asked_s: float,
        admitted_s: float,
        in_flight: int,
        window: int,
        read_span: tuple[float, float] | None = None,
    ) -> RequestRecorder | None:
        """A new request: its recorder when traced, with its image's reading (when the
        caller timed it) and the wait for a free slot."""
        tracer = self.tracer
        if tracer is None:
            return None
        recorder = tracer.begin(request_id)
        if recorder is not None and read_span is not None:
            recorder.stage(stage.READ, *read_span)
        if recorder is not None and admitted_s > asked_s:
            recorder.stage(stage.SLOT_WAIT, asked_s, admitted_s)
            recorder.facts.update(in_flight=in_flight, window=window)
        return recorder

    def prepared(
        self, req: Traced, started_s: float, prepared_s: float, tensor: np.ndarray, input_name: str
    ) -> None:
        if req.trace is not None:
            req.trace.stage(stage.PREPROCESS, started_s, prepared_s)
            if self.tracer is not None and self.tracer.keep_inputs:
                req.trace.inputs = {input_name: tensor}

    @staticmethod
    def stage(members: Sequence[Traced], name: str, start_s: float, end_s: float) -> None:
        """A stage of a send: every traced member of it gets it."""
        for member in members:
            if member.trace is not None:
                member.trace.stage(name, start_s, end_s)

    @staticmethod
    def waited_for_batch(members: Sequence[Traced], dispatched_s: float) -> None:
        """Client batching: each member waited from its preparation to its batch's dispatch."""
        for member in members:
            if member.trace is not None:
                member.trace.stage(stage.BATCH_WAIT, getattr(member, "prepared", dispatched_s), dispatched_s)

    @staticmethod
    def wrote(members: Sequence[Traced], transport_kind: str, start_s: float, end_s: float) -> None:
        """The transport wrote the tensors (serialised them, or into shared memory)."""
        PathTracing.stage(members, WRITE_STAGE.get(str(transport_kind), stage.SERIALISE), start_s, end_s)

    @staticmethod
    def answered(members: Sequence[Traced], sent_s: float, answered_s: float) -> float:
        """The last attempt's reply came at `answered_s` (gRPC's thread) and a worker has it
        now: in flight, then the hand-off. Returns now (the outputs are read from here)."""
        now = time.monotonic()
        for member in members:
            if member.trace is not None:
                member.trace.stage(stage.IN_FLIGHT, sent_s, answered_s)
                member.trace.stage(stage.REPLY, answered_s, now)
        return now

    @staticmethod
    def headers(members: Sequence[Traced], headers: dict[str, Any] | None) -> dict[str, Any] | None:
        """The send's headers, with the first traced member's (its `traceparent`)."""
        for member in members:
            if member.trace is not None and member.trace.headers:
                return {**(headers or {}), **member.trace.headers}
        return headers

    @staticmethod
    def retried(members: Sequence[Traced], attempt_start_s: float, answered_s: float, reason: str) -> None:
        for member in members:
            if member.trace is not None:
                member.trace.stage(stage.ATTEMPT, attempt_start_s, answered_s)
                member.trace.facts["attempts"] = member.trace.facts.get("attempts", 1) + 1
                member.trace.facts["retry_reason"] = reason

    def called_back(self, req: Traced, send: Any, start_s: float, end_s: float) -> None:
        """The request's result was handed on (its callback ran): its record goes to the
        tracer, with its send's window for the clock placement."""
        recorder, tracer = req.trace, self.tracer
        if recorder is None:
            return
        req.trace = None
        recorder.stage(stage.CALLBACK, start_s, end_s)
        if tracer is None:
            return
        answered = getattr(send, "answered_at", 0.0) or None
        tracer.finished(
            recorder,
            server_request_id=getattr(send, "id", None),
            send_s=getattr(send, "sent_at", 0.0) or None,
            reply_s=answered,
        )
