"""Turn tritonclient / gRPC failures into statuses, kinds and messages a user can act on.

The only place that reads gRPC's text: everything above decides on `ErrorKind`.
Messages lead with what happened and what to do; the raw detail comes last.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from app.inference.result import ErrorKind, Status


class SessionError(RuntimeError):
    """The session cannot be used: server unreachable, model missing or not ready, not
    understood, bad settings. `models`: what the server has, when it was read; `states`:
    their states as it said (name -> "READY", "UNAVAILABLE"...), when known."""

    def __init__(
        self,
        message: str,
        kind: ErrorKind = ErrorKind.SERVER,
        models: Sequence[str] = (),
        states: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.models = tuple(models)
        self.states = dict(states or {})


class SessionClosedError(SessionError):
    def __init__(self, message: str = "the session is closed") -> None:
        super().__init__(message, ErrorKind.CANCELLED)


class WindowFullError(RuntimeError):
    """No free slot in the in-flight window and the caller asked not to wait."""


@dataclass(frozen=True)
class Failure:
    status: Status
    kind: ErrorKind
    message: str
    transient: bool  # worth retrying (the server may answer the next attempt)
    # The server does not know our shared-memory regions (it restarted): register them again.
    regions_lost: bool = False
    # The server accepted the connection, then closed it: a TLS server or an HTTP port (the
    # text cannot tell which; a look at the port can).
    closed_by_peer: bool = False
    # The server does not know the name the call gave (a shared-memory region, a model).
    name_unknown: bool = False


def grpc_status(error: BaseException) -> str:
    """'StatusCode.UNAVAILABLE' etc., or '' when the error carries none."""
    status = getattr(error, "status", None)
    value = status() if callable(status) else status
    return str(value or "")


def error_text(error: BaseException) -> str:
    message = getattr(error, "message", None)
    text = message() if callable(message) else message
    return str(text or error)


def classify_failure(error: BaseException, url: str, secrets: Iterable[str | bytes] = ()) -> Failure:
    """Status, kind, clear message (with a hint where we know the usual cause), transience and
    the flags callers decide on (the only reading of gRPC's text)."""
    text = redact(error_text(error), secrets)
    lowered = text.lower()
    name_unknown = "not found" in lowered or "unable to find" in lowered
    failure = _classify(grpc_status(error), text, lowered, url, name_unknown)
    return dataclasses.replace(failure, closed_by_peer=closed_by_peer(text), name_unknown=name_unknown)


def _classify(code: str, text: str, lowered: str, url: str, name_unknown: bool) -> Failure:
    if "DEADLINE_EXCEEDED" in code or "deadline exceeded" in lowered:
        return Failure(
            Status.TIMEOUT, ErrorKind.TIMEOUT, f"timed out waiting for {url} (deadline exceeded)", False
        )
    if "CANCELLED" in code or "locally cancelled" in lowered or "channel closed" in lowered:
        return Failure(Status.CANCELLED, ErrorKind.CANCELLED, "cancelled", False)
    if "larger than max" in lowered or "RESOURCE_EXHAUSTED" in code:
        return Failure(
            Status.FAILED,
            ErrorKind.TOO_LARGE,
            f"message too large for {url}: the image or the model's output exceeds the gRPC "
            f"message limit; send smaller images ({text})",
            False,
        )
    if _looks_like_tls_mismatch(lowered):
        return Failure(
            Status.FAILED,
            ErrorKind.TLS,
            f"TLS mismatch with {url}: use --ssl for a TLS server, leave it off for a plain one; "
            f"check --root-certificates ({text})",
            False,
        )
    if "shared memory region" in lowered and name_unknown:
        message = f"{url} lost this client's shared-memory regions (restarted?): {text}"
        return Failure(Status.FAILED, ErrorKind.SERVER, message, True, regions_lost=True)
    if "UNAVAILABLE" in code or "failed to connect" in lowered or "connection refused" in lowered:
        return Failure(Status.FAILED, ErrorKind.UNREACHABLE, unreachable_message(url, text), True)
    if "NOT_FOUND" in code or "unknown model" in lowered or "is not found" in lowered:
        return Failure(Status.FAILED, ErrorKind.NOT_FOUND, f"{url}: {text}", False)
    if "INVALID_ARG" in code:
        return Failure(Status.FAILED, ErrorKind.BAD_INPUT, text, False)
    return Failure(Status.FAILED, ErrorKind.SERVER, text, False)


def _looks_like_tls_mismatch(lowered: str) -> bool:
    return any(s in lowered for s in ("ssl", "tls", "handshake", "wrong_version_number", "certificate"))


def unreachable_message(url: str, detail: str, listener: str | None = None) -> str:
    """`listener`: what app.inference.transports.port_probe found on a port that closed the connection
    ("tls", "http" or None when not probed / unknown)."""
    lowered = detail.lower()
    closed = closed_by_peer(detail)
    if listener == "tls":
        lead = (
            f"cannot reach Triton at {url}: the server there speaks TLS. Add --ssl "
            "(and --root-certificates FILE for a private certificate authority)"
        )
    elif listener == "http" or "http1" in lowered or (not closed and _port(url) in ("8000", "80")):
        lead = (
            f"cannot reach Triton at {url}: something answers there but does not speak gRPC. "
            "Is this Triton's HTTP port? The viewer speaks gRPC, usually port 8001"
        )
    elif closed:
        # A plain gRPC client gets this from a TLS server and from Triton's HTTP port alike.
        tls_first = _port(url) in ("443", "8443")
        tls = "if the server uses TLS, add --ssl"
        http = "if it is Triton's HTTP port, use the gRPC port (usually 8001)"
        lead = (
            f"cannot reach Triton at {url}: the server closed the connection, so it does not speak "
            f"plain gRPC: {tls if tls_first else http}; {http if tls_first else tls}"
        )
    elif "settings frame" in lowered or "handshake" in lowered:
        lead = (
            f"cannot reach Triton at {url}: something accepted the connection but did not answer "
            "as a gRPC server. Is it Triton's gRPC port (usually 8001)? A TLS server needs --ssl"
        )
    elif "failed to connect" in lowered or "connection refused" in lowered:
        lead = (
            f"cannot reach Triton at {url}: nothing is listening there. Is Triton running, and is "
            f"{url} its gRPC port (usually 8001)?"
        )
    else:
        lead = f"cannot reach Triton at {url}"
    return f"{lead} ({detail})"


def _port(url: str) -> str:
    return url.rsplit(":", 1)[-1]


def closed_by_peer(text: str) -> bool:
    """The server accepted the connection, then closed it: not a plain gRPC server (TLS, HTTP)."""
    lowered = text.lower()
    return "socket closed" in lowered or "connection reset" in lowered


def redact(text: str, secrets: Iterable[str | bytes]) -> str:
    """Header values (tokens, keys) never appear in messages or logs (binary ones are not text)."""
    for secret in secrets:
        if isinstance(secret, str) and len(secret) >= 3:
            text = text.replace(secret, "***")
    return text


def first_paragraph(text: str) -> str:
    """A server's reason without the Python traceback the backend appends ("\n\nAt:\n ...")."""
    return text.split("\n\nAt:")[0].strip()
