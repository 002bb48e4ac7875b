"""The result of one inference request, as every layer above the session sees it."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any


class Status(enum.StrEnum):
    """How a request ended. Every request ends exactly once with one of these."""

    OK = "ok"
    ERROR = "error"
    TIMEOUT = "timeout"
    CANCELLED = "cancelled"


@dataclass(frozen=True)
class Detection:
    """One box in pixels of the original image (x right, y down; x2/y2 exclusive)."""

    box: tuple[float, float, float, float]
    score: float
    class_id: int
    label: str

    def to_record(self) -> dict[str, Any]:
        return {
            "box": [round(v, 2) for v in self.box],
            "score": round(self.score, 4),
            "class_id": self.class_id,
            "label": self.label,
        }


@dataclass
class InferenceResult:
    """What the session hands back for one request, whatever happened to it."""

    request_id: str
    status: Status
    source: str | None = None
    frame: int | None = None
    error: str | None = None
    latency_ms: float | None = None
    width: int | None = None
    height: int | None = None
    detections: list[Detection] = field(default_factory=list)
    model: str | None = None
    server: str | None = None
    retries: int = 0
    # Opaque value given at submit time (e.g. the frame to display); never serialised.
    tag: Any = None

    @property
    def ok(self) -> bool:
        return self.status is Status.OK

    def to_record(self) -> dict[str, Any]:
        """The JSONL record of ../DESIGN.md (one input)."""
        return {
            "source": self.source,
            "frame": self.frame,
            "request_id": self.request_id,
            "ok": self.ok,
            "error": self.error,
            "latency_ms": None if self.latency_ms is None else round(self.latency_ms, 3),
            "width": self.width,
            "height": self.height,
            "detections": [d.to_record() for d in self.detections] if self.ok else [],
        }


def naming_input(source: str | None, error: str, frame: int | None = None) -> str:
    """`error` with the input it concerns named once: many messages already start with it."""
    where = source or "request"
    if frame is not None:
        where += f" frame {frame}"
    if source and error.startswith(source):
        return error if frame is None else f"{error} (frame {frame})"
    return f"{where}: {error}"
