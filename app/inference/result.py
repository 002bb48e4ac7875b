"""The result of one inference request, as every layer above the session sees it."""

from __future__ import annotations

import enum
import json
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from app.inference.masks import BinaryMask
from app.inference.redaction import redact

Keypoint = tuple[float, float, float]  # x, y in original pixels; score (visibility) 0..1


class Status(enum.StrEnum):
    """How an input ended. Every request ends exactly once with one of OK, FAILED, TIMEOUT,
    CANCELLED; SKIPPED is for an entry of a folder that is not media (never a request)."""

    OK = "ok"
    FAILED = "failed"
    TIMEOUT = "timeout"
    CANCELLED = "cancelled"
    SKIPPED = "skipped"


class ErrorKind(enum.StrEnum):
    """What kind of failure: callers decide on this, never on the message's text."""

    UNREACHABLE = "unreachable"  # no server answers (or not gRPC there): worth retrying
    NOT_FOUND = "not_found"  # no such model (or not ready) on the server
    TIMEOUT = "timeout"
    CANCELLED = "cancelled"
    TOO_LARGE = "too_large"  # over the gRPC message limit, or over the input size limit
    TLS = "tls"  # TLS on one side only, or a certificate problem
    UNSUPPORTED = "unsupported"  # the model's inputs/outputs are not understood (no profile)
    SERVER = "server"  # the server or the model reported an error
    BAD_INPUT = "bad_input"  # the input could not be read, decoded or prepared
    SKIPPED = "skipped"  # not an image or video


PIXEL_DECIMALS = 2  # boxes and keypoints in records: hundredths of a pixel


def record_pixel(value: float) -> float:
    """A coordinate as records write it (and as `evaluate` scores it, so that its figures are
    those of its records)."""
    return round(float(value), PIXEL_DECIMALS)


def record_score(value: float) -> float:
    """A score as records write it: unrounded, the value every figure is computed from. JSON
    writes Python's shortest repr, which reads back as the same float: a model's float32 score
    keeps every bit. (Rounded to 4 decimals, two scores 0.94971 and 0.94968 of different images
    tied at 0.9497 in the records and pycocotools ranked them otherwise than `evaluate` did.)"""
    return float(value)


@dataclass(frozen=True)
class Detection:
    """One box in pixels of the original image (x right, y down; x2/y2 exclusive), with,
    depending on the model, its keypoints (pose) and its pixels (instance segmentation)."""

    box: tuple[float, float, float, float]
    score: float
    class_id: int
    label: str
    keypoints: tuple[Keypoint, ...] | None = None
    mask: BinaryMask | None = None
    # The object's identity across the frames of a stream (set by a tracker, else None).
    track_id: int | None = None
    # An oriented box (OBB models): cx, cy, w, h in original pixels and the angle in radians;
    # `box` is then the axis-aligned box around it, clipped to the image.
    obb: tuple[float, float, float, float, float] | None = None

    def polygon(self) -> list[tuple[float, float]] | None:
        """The oriented box's four corners (Ultralytics' xyxyxyxy order), None without one."""
        if self.obb is None:
            return None
        cx, cy, w, h, a = self.obb
        c, s = math.cos(a), math.sin(a)
        v1, v2 = (w / 2 * c, w / 2 * s), (-h / 2 * s, h / 2 * c)
        return [
            (cx + v1[0] + v2[0], cy + v1[1] + v2[1]),
            (cx + v1[0] - v2[0], cy + v1[1] - v2[1]),
            (cx - v1[0] - v2[0], cy - v1[1] - v2[1]),
            (cx - v1[0] + v2[0], cy - v1[1] + v2[1]),
        ]

    def to_record(self) -> dict[str, Any]:
        record: dict[str, Any] = {
            "box": [record_pixel(v) for v in self.box],
            "score": record_score(self.score),
            "class_id": self.class_id,
            "label": self.label,
        }
        # Only when the model gives them: box-only records stay exactly as they were.
        if self.keypoints is not None:
            record["keypoints"] = [
                [record_pixel(x), record_pixel(y), round(s, 4)] for x, y, s in self.keypoints
            ]
        if self.mask is not None:
            record["mask"] = self.mask.rle()
            record["area"] = self.mask.area
        if self.track_id is not None:
            record["track_id"] = self.track_id
        if self.obb is not None:
            record["obb"] = [round(v, 2) for v in self.obb[:4]] + [round(self.obb[4], 5)]
            record["polygon"] = [[round(x, 2), round(y, 2)] for x, y in self.polygon() or ()]
        return record


@dataclass(frozen=True)
class SemanticMask:
    """The pixels of one class in a semantic segmentation (original-image pixels)."""

    class_id: int
    label: str
    mask: BinaryMask

    @property
    def area(self) -> int:
        return self.mask.area

    def to_record(self) -> dict[str, Any]:
        return {"class_id": self.class_id, "label": self.label, "mask": self.mask.rle(), "area": self.area}


@dataclass(frozen=True)
class ClassScore:
    """One entry of a classifier's top-k."""

    class_id: int
    label: str
    score: float

    def to_record(self) -> dict[str, Any]:
        return {"class_id": self.class_id, "label": self.label, "score": record_score(self.score)}


@dataclass(frozen=True)
class RequestTiming:
    """Where one request's time went on the client, in milliseconds."""

    preprocess_ms: float  # resize, normalise, copy into the tensor
    wait_ms: float  # prepared -> sent: a client batch filling, a worker, a retry back-off
    round_trip_ms: float  # sent -> answered: serialisation, network and the whole server side
    postprocess_ms: float  # decode, NMS, mapping boxes back to the original image
    batch: int = 1  # images in the same request (client-side batching)


@dataclass
class InferenceResult:
    """What the session hands back for one request, whatever happened to it."""

    request_id: str | None  # None: the input never became a request (unreadable, skipped, ...)
    status: Status
    source: str | None = None
    frame: int | None = None
    error: str | None = None
    latency_ms: float | None = None
    width: int | None = None
    height: int | None = None
    detections: list[Detection] = field(default_factory=list)
    # Semantic segmentation (one entry per class present) and classification (top-k, best
    # first); None for the models that do not give them (then left out of the record).
    masks: list[SemanticMask] | None = None
    classes: list[ClassScore] | None = None
    model: str | None = None
    server: str | None = None
    retries: int = 0
    error_kind: ErrorKind | None = None
    timing: RequestTiming | None = None  # None when it never got an answer
    # Detections (or classes) the model gave with NaN/infinite numbers, an inverted box or a
    # negative class id: dropped, counted here (in the record when not 0).
    dropped_invalid: int = 0
    # Opaque value given at submit time, never serialised. `object`, not Any: a reader narrows
    # it (the live frame: app.pipeline.live.frame_of), so a wrong guess fails where it is made.
    tag: object = None

    @classmethod
    def local_failure(
        cls,
        source: str,
        error: str,
        *,
        frame: int | None = None,
        status: Status = Status.FAILED,
        kind: ErrorKind = ErrorKind.BAD_INPUT,
        width: int | None = None,
        height: int | None = None,
    ) -> InferenceResult:
        """The one result of an input that never became a request (missing, unreadable, not
        media, not sent): the viewer and the command line record it the same way."""
        return cls(
            request_id=None,
            status=status,
            source=source,
            frame=frame,
            error=error,
            width=width,
            height=height,
            error_kind=kind,
        )

    @property
    def ok(self) -> bool:
        return self.status is Status.OK

    def kind(self) -> ErrorKind:
        """What kind of failure this is (not ok); every producer sets `error_kind`, the
        status gives it for a result that came without one."""
        return self.error_kind or _KIND_OF_STATUS.get(self.status, ErrorKind.SERVER)

    def to_record(self) -> dict[str, Any]:
        """The JSONL record of ../DESIGN.md (one input)."""
        record: dict[str, Any] = {
            "source": self.source,
            "frame": self.frame,
            "request_id": self.request_id,
            "ok": self.ok,
            "status": self.status.value,
            "error": None if self.error is None else redact(self.error),
            "latency_ms": None if self.latency_ms is None else round(self.latency_ms, 3),
            "width": self.width,
            "height": self.height,
            "detections": [d.to_record() for d in self.detections] if self.ok else [],
        }
        if not self.ok:
            # Scripts decide on the kind, never on the message's text.
            record["error_kind"] = self.kind().value
        if self.dropped_invalid:
            record["dropped_invalid"] = self.dropped_invalid
        # Only for the model kinds that give them, so detection records stay as they were.
        if self.masks is not None:
            record["masks"] = [m.to_record() for m in self.masks] if self.ok else []
        if self.classes is not None:
            record["classes"] = [c.to_record() for c in self.classes] if self.ok else []
        return record


_KIND_OF_STATUS = {
    Status.TIMEOUT: ErrorKind.TIMEOUT,
    Status.CANCELLED: ErrorKind.CANCELLED,
    Status.SKIPPED: ErrorKind.SKIPPED,
}


def naming_input(source: str | None, error: str, frame: int | None = None) -> str:
    """`error` with the input it concerns named once: many messages already start with it."""
    where = source or "request"
    if frame is not None:
        where += f" frame {frame}"
    if source and error.startswith(source):
        return error if frame is None else f"{error} (frame {frame})"
    return f"{where}: {error}"


def finite(value: Any) -> Any:
    """`value` with every non-finite float made null (an undefined figure: a mean of nothing,
    a ratio over zero) and numpy scalars and arrays made plain, for strict JSON."""
    if isinstance(value, dict):
        return {str(k): finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    if isinstance(value, np.ndarray):
        return finite(value.tolist())
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        f = float(value)
        return f if math.isfinite(f) else None
    return value


def strict_json(value: Any, **kwargs: Any) -> str:
    """JSON every strict parser reads: undefined figures as null (`finite`), and
    allow_nan=False, so a NaN that slipped through fails here rather than in the reader.
    The summaries and reports of infer, compare, evaluate, bench and tune are written so."""
    return json.dumps(finite(value), allow_nan=False, **kwargs)


def record_line(record: dict[str, Any], encoding: str | None = "utf-8") -> str:
    """One JSON line, written as is when `encoding` can encode it, else fully escaped (\\uXXXX):
    a file name that is not valid UTF-8 (surrogate escapes from os.fsdecode) never cuts the
    output short. The command line and the viewer's export write records with this."""
    # allow_nan=False: a NaN or infinity that slipped through is an error here, never
    # `NaN`/`Infinity` in a file that strict JSON parsers refuse.
    line = json.dumps(record, ensure_ascii=False, allow_nan=False)
    try:
        line.encode(encoding or "utf-8")
    except UnicodeEncodeError:
        line = json.dumps(record, ensure_ascii=True, allow_nan=False)
    return line + "\n"
