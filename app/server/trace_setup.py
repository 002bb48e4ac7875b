"""How the embedded server is started with Triton's request tracing available.

Tracing is set up at start and left off (`level=OFF`): it costs nothing until a client asks
for it with `update_trace_settings` (app.inference.tracing.settings), per model or for the
whole server, for the requests it wants traced. Two modes, as Triton has:

- the trace file (Triton's own mode): each trace is written to a file of the server's
  private trace folder, `PATH.0`, `PATH.1`, ... one per request once `log_frequency` is 1.
  The folder is the server's own (0700: a trace names models and request ids);
- OpenTelemetry: the server posts each trace to an OTLP/HTTP receiver (the app's own,
  app.inference.tracing.otlp); a client chooses the requests to trace by sending a W3C
  `traceparent` with them (traced whatever the rate, seen on 2.51).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from pathlib import Path

TRACE_FOLDER = "traces"
TRACE_FILE = "trace.json"
# One request in this many traced without a traceparent: in effect none.
UNTRACED_RATE = 2**31 - 1


class TraceMode(enum.StrEnum):
    FILE = "triton"  # Triton's name for its own mode
    OPENTELEMETRY = "opentelemetry"


@dataclass(frozen=True)
class TraceSetup:
    """What the server is started with. `otlp_url` only for OpenTelemetry: where the server
    posts its spans (e.g. "http://127.0.0.1:4318/v1/traces")."""

    mode: TraceMode = TraceMode.FILE
    otlp_url: str = ""

    def arguments(self, workdir: Path) -> list[str]:
        if self.mode is TraceMode.OPENTELEMETRY:
            return [
                "--trace-config=mode=opentelemetry",
                f"--trace-config=opentelemetry,url={self.otlp_url}",
                # A request carrying a `traceparent` is traced whatever the rate (2.51): the
                # client sends one on the requests it traces; the rate keeps the others out.
                "--trace-config=level=TIMESTAMPS",
                f"--trace-config=rate={UNTRACED_RATE}",
                "--trace-config=count=-1",
                # Spans posted every 200 ms, not every 5 s (the default).
                "--trace-config=opentelemetry,bsp_schedule_delay=200",
            ]
        return [
            f"--trace-config=triton,file={trace_file_of(workdir)}",
            # Available, off: a client turns it on for the models and requests it traces.
            "--trace-config=level=OFF",
            "--trace-config=rate=1",
        ]

    def prepare(self, workdir: Path) -> None:
        if self.mode is TraceMode.FILE:
            trace_file_of(workdir).parent.mkdir(mode=0o700, exist_ok=True)


def trace_file_of(workdir: Path) -> Path:
    """The trace file's base name in a server's work folder (traces land in PATH.0, PATH.1...)."""
    return workdir / TRACE_FOLDER / TRACE_FILE
