"""Starting a session's tracer: where its server's traces come from, for the model it serves.

The session's first server (tracing settings are read and changed there; a session over
several servers traces the requests that went to any of them, with the first one's files
or receiver: the others' requests show their client stages). Same machine means a loopback
address: the trace file is then readable here and the server's steady clock is this one's
(app.inference.tracing.clock checks it, and turns to the round-trip estimate if not).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from app.inference.core.pool import ConnectionPool
from app.inference.core.transport_choice import is_loopback
from app.inference.introspection.extensions import ServerFeatures
from app.inference.protocol import Endpoint
from app.inference.tracing.otlp import OtlpReceiver
from app.inference.tracing.settings import TraceControl
from app.inference.tracing.tracer import Tracer, TraceSelection


def open_tracer(
    pool: ConnectionPool,
    endpoints: Sequence[Endpoint],
    model: str,
    features: ServerFeatures,
    headers: Mapping[str, str | bytes],
    selection: TraceSelection,
    receiver: OtlpReceiver | None = None,
    timeout_s: float = 5.0,
) -> Tracer:
    """Blocking (the server's trace settings): from a worker thread or the command line."""
    channel = pool.first_channel(endpoints[0])
    control = TraceControl(channel, headers, features, timeout_s)
    same_machine = all(is_loopback(endpoint) for endpoint in endpoints)
    return Tracer.start(selection, model, control, same_machine=same_machine, receiver=receiver)
