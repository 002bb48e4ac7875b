"""How the embedded server is started with Triton's request tracing available.

Tracing is set up at start and left off (`level=OFF`): it costs nothing until a client asks
for it with `update_trace_settings` (app.inference.tracing.settings), per model or for the
whole server, for the requests it wants traced. Two modes, as Triton has:

- the trace file (Triton's own mode): each trace is written to a file of the server's
  private trace folder, `PATH.0`, `PATH.1`, ... one per request once `log_frequency` is 1.
  The folder is the server's own (0700: a trace names models and request ids);
- OpenTelemetry: the server posts each trace to an OTLP/HTTP receiver (the app's own,
  app.inference.tracing.otlp); its settings are fixed at start (level, rate), so a client
  chooses the requests to trace by sending a W3C `traceparent` with them.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from pathlib import Path

TRACE_FOLDER = "traces"
TRACE_FILE = "trace.json"


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
                # Settings are fixed at start in this mode: every request that carries a
                # sampled `traceparent` is traced (the client sends one on the requests to trace).
                "--trace-config=level=TIMESTAMPS",
                "--trace-config=rate=1",
                "--trace-config=count=-1",
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
