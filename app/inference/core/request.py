"""One request on its way through the session (`PendingRequest`), and the call that carries it
to the server (`Send`: one request, or several of one shape batched by the client). Plain
records: the session registers them (in_flight.py) and the request path moves them
(request_path.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from app.inference.core.group import RequestGroup
from app.inference.decoding.letterbox import BoxTransform
from app.inference.result import InferenceResult
from app.inference.tracing.tracer import RequestRecorder
from app.inference.transports.channel import Call, Channel
from app.inference.transports.transport import Lease

ResultCallback = Callable[[InferenceResult], None]


@dataclass(eq=False)
class PendingRequest:
    id: str
    callback: ResultCallback
    source: str | None
    frame: int | None
    tag: object
    group: RequestGroup | None
    width: int
    height: int
    started: float
    deadline: float
    timeout_s: float
    finished: bool = False
    holds_slots: bool = True  # its places in the session's (and group's) window
    tensor: np.ndarray | None = None  # prepared, until it is sent
    transform: BoxTransform | None = None
    preprocess_ms: float = 0.0
    prepared: float = 0.0  # monotonic time the tensor was ready
    send: Send | None = None  # the gRPC call carrying it (shared when batched)
    trace: RequestRecorder | None = None  # traced requests only (trace_hooks.py)


@dataclass(eq=False)
class Send:
    """One gRPC call: one request, or several of the same shape batched by the client."""

    members: list[PendingRequest]
    tensor: np.ndarray
    deadline: float
    attempts: int = 0
    channel: Channel | None = None
    call: Call | None = None  # the attempt in flight
    lease: Lease | None = None
    sent_at: float = 0.0
    answered_at: float = 0.0  # the last attempt's reply (or error) arrived
    ended: bool = False  # answered or given up: its lease went back to the transport

    @property
    def id(self) -> str:
        return ",".join(m.id for m in self.members)

    def live_members(self) -> list[PendingRequest]:
        return [m for m in self.members if not m.finished]
