"""Turn tritonclient / gRPC failures into statuses and messages a user can act on."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from app.inference.result import Status


class SessionError(RuntimeError):
    """The session cannot be used: server unreachable, model missing or not ready, bad settings."""


class SessionClosedError(SessionError):
    pass


class WindowFullError(RuntimeError):
    """No free slot in the in-flight window and the caller asked not to wait."""


@dataclass(frozen=True)
class Failure:
    status: Status
    message: str
    transient: bool  # worth retrying (the server may answer the next attempt)


def grpc_status(error: BaseException) -> str:
    """'StatusCode.UNAVAILABLE' etc., or '' when the error carries none."""
    status = getattr(error, "status", None)
    value = status() if callable(status) else status
    return str(value or "")


def error_text(error: BaseException) -> str:
    message = getattr(error, "message", None)
    text = message() if callable(message) else message
    return str(text or error)


def classify(error: BaseException, url: str, secrets: Iterable[str] = ()) -> Failure:
    """Status, clear message (with a hint where we know the usual cause) and transience."""
    code = grpc_status(error)
    text = redact(error_text(error), secrets)
    lowered = text.lower()
    if "DEADLINE_EXCEEDED" in code or "deadline exceeded" in lowered:
        return Failure(Status.TIMEOUT, f"timed out waiting for {url} (deadline exceeded)", False)
    if "CANCELLED" in code or "locally cancelled" in lowered or "channel closed" in lowered:
        return Failure(Status.CANCELLED, "cancelled", False)
    if "larger than max" in lowered or "RESOURCE_EXHAUSTED" in code:
        return Failure(
            Status.ERROR,
            f"message too large for {url}: {text} (the image or the model's "
            "output exceeds the gRPC message limit; send smaller images)",
            False,
        )
    if _looks_like_tls_mismatch(lowered):
        return Failure(
            Status.ERROR,
            f"TLS mismatch with {url}: {text} (use --ssl for a TLS server, "
            "leave it off for a plain one; check --root-certificates)",
            False,
        )
    if "UNAVAILABLE" in code or "failed to connect" in lowered or "connection refused" in lowered:
        return Failure(Status.ERROR, unreachable_message(url, text), True)
    return Failure(Status.ERROR, text, False)


def _looks_like_tls_mismatch(lowered: str) -> bool:
    return any(s in lowered for s in ("ssl", "tls", "handshake", "wrong_version_number", "certificate"))


def unreachable_message(url: str, detail: str) -> str:
    hint = ""
    lowered = detail.lower()
    if "http1" in lowered or "socket closed" in lowered or url.rsplit(":", 1)[-1] in ("8000", "80"):
        hint = (
            " Something answers there but does not speak gRPC: is this Triton's HTTP port?"
            " The viewer speaks gRPC, usually port 8001."
        )
    elif "failed to connect" in lowered or "connection refused" in lowered:
        hint = f" Nothing is listening there: is Triton running, and is {url} its gRPC port (usually 8001)?"
    return f"cannot reach Triton at {url}: {detail}.{hint}"


def redact(text: str, secrets: Iterable[str]) -> str:
    """Header values (tokens, keys) never appear in messages or logs."""
    for secret in secrets:
        if secret and len(secret) >= 3:
            text = text.replace(secret, "***")
    return text


def first_paragraph(text: str) -> str:
    """A server's reason without the Python traceback the backend appends ("\n\nAt:\n ...")."""
    return text.split("\n\nAt:")[0].strip()
