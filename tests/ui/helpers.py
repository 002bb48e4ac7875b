"""Builders shared by the widget tests."""

from __future__ import annotations

from app.inference.result import Detection, InferenceResult, Status


def make_result(
    i: int,
    status: Status = Status.OK,
    source: str | None = None,
    detections: list[Detection] | None = None,
    error: str | None = None,
) -> InferenceResult:
    return InferenceResult(
        request_id=f"req-{i}",
        status=status,
        source=source if source is not None else f"img_{i}.jpg",
        frame=None,
        error=error if error is not None else (None if status is Status.OK else f"{status.value} #{i}"),
        latency_ms=5.0 + i if status is Status.OK else None,
        width=320,
        height=240,
        detections=detections or [],
    )
