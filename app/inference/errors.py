"""Turn tritonclient failures (gRPC or HTTP) into statuses, kinds and messages a user can act on.

The only place that reads an error's status or text: everything above decides on `ErrorKind`
and the `Failure` flags. Status codes of both protocols are read as one vocabulary (gRPC's
names: an HTTP 404 is NOT_FOUND, a 503 UNAVAILABLE). Messages lead with what happened and
what to do; the raw detail comes last.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from app.inference.protocol import Endpoint, ServerProtocol, same_server_over
from app.inference.redaction import redact as redact  # re-exported: messages are redacted here
from app.inference.result import ErrorKind, Status


class SessionError(RuntimeError):
    """The session cannot be used: server unreachable, model missing or not ready, not
    understood, bad settings. `models`: what the server has, when it was read; `states`:
    their states as it said (name -> "READY", "UNAVAILABLE"...), when known. `offer`: a URL
    that would work instead, offered to the user (the same server over the other protocol,
    e.g. "that is Triton's HTTP port: connect over HTTP?")."""

    def __init__(
        self,
        message: str,
        kind: ErrorKind = ErrorKind.SERVER,
        models: Sequence[str] = (),
        offer: str | None = None,
        states: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.models = tuple(models)
        self.states = dict(states or {})
        self.offer = offer


class ExtensionMissingError(SessionError):
    """The server lacks one of Triton's extensions (statistics, configuration, repository...):
    the message is the one plain sentence that says so."""

    def __init__(self, message: str) -> None:
        super().__init__(message, ErrorKind.UNSUPPORTED)


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
    # The server does not implement the call (gRPC UNIMPLEMENTED, HTTP 404/405/501): an
    # extension (Triton's config, statistics, shared memory...) it does not have.
    unimplemented: bool = False


# HTTP statuses as gRPC's codes (how Triton maps one to the other, plus what proxies answer).
_HTTP_CODES = {
    "400": "INVALID_ARGUMENT",
    "401": "UNAUTHENTICATED",
    "403": "PERMISSION_DENIED",
    "404": "NOT_FOUND",
    "405": "UNIMPLEMENTED",
    "408": "DEADLINE_EXCEEDED",
    "409": "ALREADY_EXISTS",
    "413": "RESOURCE_EXHAUSTED",
    "422": "INVALID_ARGUMENT",
    "429": "UNAVAILABLE",  # too many requests: worth another try after a back-off
    "499": "CANCELLED",
    "500": "INTERNAL",
    "501": "UNIMPLEMENTED",
    "502": "UNAVAILABLE",  # a proxy that cannot reach the server
    "503": "UNAVAILABLE",
    "504": "DEADLINE_EXCEEDED",
}
# HTTP statuses that mean "this server has no such call" when the call's arguments are known
# to be good (the model exists): FastAPI-style servers answer 404 for a route they lack.
_HTTP_MISSING = frozenset({"400", "404", "405", "501"})


def grpc_status(error: BaseException) -> str:
    """The error's status as it carries it ('StatusCode.UNAVAILABLE', '404', 'UNAVAILABLE'),
    or '' when it carries none."""
    status = getattr(error, "status", None)
    value = status() if callable(status) else status
    return str(value or "")


def status_code(error: BaseException) -> str:
    """The error's status as a gRPC code name ('UNAVAILABLE', 'NOT_FOUND'; HTTP statuses
    mapped), '' when it carries none."""
    raw = grpc_status(error)
    return _HTTP_CODES.get(
        raw, "INTERNAL" if raw.isdigit() and raw >= "500" else raw.removeprefix("StatusCode.")
    )


def extension_missing(error: BaseException) -> bool:
    """The server answered that it does not have the call (gRPC UNIMPLEMENTED; HTTP 404, 405,
    501, or 400 from servers that reject an unknown route): decided by the status code only,
    for a call whose arguments are known to be good."""
    raw = grpc_status(error)
    return raw in _HTTP_MISSING or raw.removeprefix("StatusCode.") == "UNIMPLEMENTED"


def error_text(error: BaseException) -> str:
    message = getattr(error, "message", None)
    text = message() if callable(message) else message
    return str(text or error)


def classify_failure(
    error: BaseException, endpoint: Endpoint, secrets: Iterable[str | bytes] = ()
) -> Failure:
    """Status, kind, clear message (with a hint where we know the usual cause), transience and
    the flags callers decide on (the only reading of gRPC's text)."""
    text = redact(error_text(error), secrets)
    lowered = text.lower()
    name_unknown = "not found" in lowered or "unable to find" in lowered
    # An HTTP channel's own failures say what happened as attributes, not as text.
    peer_closed = bool(getattr(error, "closed_by_peer", False)) or closed_by_peer(text)
    tls = bool(getattr(error, "tls", False))
    failure = _classify(status_code(error), text, lowered, endpoint, name_unknown, tls)
    return dataclasses.replace(
        failure,
        closed_by_peer=peer_closed,
        name_unknown=name_unknown,
        unimplemented=extension_missing(error),
    )


def _classify(
    code: str, text: str, lowered: str, endpoint: Endpoint, name_unknown: bool, tls: bool = False
) -> Failure:
    url = endpoint.url
    if "DEADLINE_EXCEEDED" in code or "deadline exceeded" in lowered:
        return Failure(
            Status.TIMEOUT, ErrorKind.TIMEOUT, f"timed out waiting for {url} (deadline exceeded)", False
        )
    if "CANCELLED" in code or "locally cancelled" in lowered or "channel closed" in lowered:
        return Failure(Status.CANCELLED, ErrorKind.CANCELLED, "cancelled", False)
    received = _RECEIVED_TOO_LARGE.search(text)
    if received:
        size, limit = (int(g) for g in received.groups())
        outputs_limit = max(limit - REPLY_OVERHEAD_BYTES, 0)
        return Failure(
            Status.FAILED,
            ErrorKind.TOO_LARGE,
            f"the model's output is too large: a reply of {size / 1e6:.1f} MB from {url}; "
            f"at most {outputs_limit / 1e6:.1f} MB of outputs per reply are accepted",
            False,
        )
    region = _REGION_TOO_SMALL.search(text)
    if region:
        name, room, needed = region.group(1), int(region.group(2)), int(region.group(3))
        return Failure(
            Status.FAILED,
            ErrorKind.SERVER,
            f"output '{name}' is larger than the model declares: {needed} bytes for the "
            f"{room} its declared datatype and shape take",
            False,
        )
    if "larger than max" in lowered or "RESOURCE_EXHAUSTED" in code:
        return Failure(
            Status.FAILED,
            ErrorKind.TOO_LARGE,
            f"message too large for {url}: the image or the model's output exceeds the "
            f"server's (or a proxy's) message limit; send smaller images ({text})",
            False,
        )
    restricted = _RESTRICTED.search(text)
    if restricted:
        # Before UNAVAILABLE (gRPC's code for it): no retry gets through without the header.
        return Failure(
            Status.FAILED, ErrorKind.SERVER, restricted_message(endpoint, restricted.group(1)), False
        )
    if CLIENT_SHM_DISABLED in lowered:
        return Failure(Status.FAILED, ErrorKind.SERVER, f"{url}: {CLIENT_SHM_NOTE}", False)
    certificate = _certificate_refused(endpoint, text, lowered)
    if certificate is not None:
        return Failure(Status.FAILED, ErrorKind.TLS, certificate, False)
    if tls or _looks_like_tls_mismatch(lowered):
        how = (
            "use https:// for a TLS server, http:// for a plain one"
            if endpoint.protocol is ServerProtocol.HTTP
            else "use --ssl for a TLS server, leave it off for a plain one"
        )
        return Failure(
            Status.FAILED,
            ErrorKind.TLS,
            f"TLS mismatch with {url}: {how}; check --root-certificates ({text})",
            False,
        )
    if "shared memory region" in lowered and name_unknown:
        message = f"{url} lost this client's shared-memory regions (restarted?): {text}"
        return Failure(Status.FAILED, ErrorKind.SERVER, message, True, regions_lost=True)
    if "stub process" in lowered and "not healthy" in lowered:
        # Triton's Python backend after a pause (SIGSTOP, a suspended laptop): it restarts the
        # stub, or the server dies and is restarted; either way a later attempt may succeed.
        return Failure(Status.FAILED, ErrorKind.SERVER, f"{url}: {text}", True)
    if "UNAVAILABLE" in code or "failed to connect" in lowered or "connection refused" in lowered:
        return Failure(Status.FAILED, ErrorKind.UNREACHABLE, unreachable_message(endpoint, text), True)
    if any(words in lowered for words in _LOST_ON_THE_WAY):
        # The call's stream was reset, or Triton's Python backend lost the reply (its stub
        # after a pause): nothing says the request itself was bad; another attempt may succeed.
        return Failure(Status.FAILED, ErrorKind.SERVER, f"{url}: {text}", True)
    if "NOT_FOUND" in code or "unknown model" in lowered or "is not found" in lowered:
        return Failure(Status.FAILED, ErrorKind.NOT_FOUND, f"{url}: {text}", False)
    if "INVALID_ARG" in code:
        return Failure(Status.FAILED, ErrorKind.BAD_INPUT, text, False)
    return Failure(Status.FAILED, ErrorKind.SERVER, text, False)


# Failures of the way, not of the request (lower case): worth another attempt.
_LOST_ON_THE_WAY = (
    "failed to retrieve the response",  # Triton's Python backend, its stub paused or restarted
    # The Python backend's answer for the requests its stub held when it was found unhealthy
    # and restarted (python_be.cc: an error without a message; a model's own error comes as
    # "Failed to process the requests, message: ...", not retried).
    "failed to process the requests.",
    "rst_stream",  # gRPC: the server reset the call's stream
    "stream removed",
    "stream reset",
    "connection reset",
    "broken pipe",
)
# The receive limit of a channel is the outputs' limit plus this (names, shapes, framing).
REPLY_OVERHEAD_BYTES = 2**20
# gRPC's receive limit (a reply over ConnectionOptions.max_output_bytes) and Triton's refusal
# to write an output into a shared-memory region sized for what the model declares.
# ("CLIENT:": this side refused the reply; without it, the server refused the request.)
_RECEIVED_TOO_LARGE = re.compile(
    r"client: received message larger than max \((\d+) vs\. (\d+)\)", re.IGNORECASE
)
_REGION_TOO_SMALL = re.compile(
    r"shared memory size specified with the request for output '([^']+)' \((\d+) bytes\) "
    r"should be at least (\d+) bytes"
)


# Triton's refusal of a call its restricted protocols guard (gRPC: UNAVAILABLE "This protocol
# is restricted, expecting header 'KEY'"; HTTP: 403 "This API is restricted, expecting header
# 'KEY'"; server src/grpc/grpc_server.cc, src/http_server.cc).
_RESTRICTED = re.compile(r"(?:protocol|API) is restricted, expecting header '([^']*)'", re.IGNORECASE)
# Since Triton 2.69 (server PR #8739) client shared memory is off unless the server runs with
# --allow-client-shm=true: gRPC UNIMPLEMENTED / HTTP 501 "Client shared memory is disabled.
# Start the server with '--allow-client-shm=true' to enable." (server src/common.h).
CLIENT_SHM_DISABLED = "client shared memory is disabled"
CLIENT_SHM_NOTE = (
    "the server refuses client shared memory (Triton 2.69 and later do unless started with "
    "--allow-client-shm=true): tensors go inside the messages"
)


def restricted_header(error: BaseException) -> str | None:
    """The header a server with restricted protocols expects for this call, None when the
    error is not such a refusal."""
    found = _RESTRICTED.search(error_text(error))
    return found.group(1) if found else None


def client_shm_disabled(error: BaseException) -> bool:
    """The server refuses client shared memory (started without --allow-client-shm=true)."""
    return CLIENT_SHM_DISABLED in error_text(error).lower()


def restricted_message(endpoint: Endpoint, key: str) -> str:
    flag = (
        "--http-restricted-api" if endpoint.protocol is ServerProtocol.HTTP else "--grpc-restricted-protocol"
    )
    return (
        f"{endpoint.url} restricts this call (the server runs with {flag}): give the header it "
        f"expects with --restricted-header {key}=VALUE (or a line 'restricted {key}=VALUE' in "
        "--header-file)"
    )


def _certificate_refused(endpoint: Endpoint, text: str, lowered: str) -> str | None:
    """A TLS connection this client refused because of the server's certificate: the name it
    was issued for, or who signed it. (gRPC reports these as "failed to connect".)"""
    url, host = endpoint.url, endpoint.host or endpoint.address
    if "hostname verification" in lowered or "peer name" in lowered or "hostname mismatch" in lowered:
        return (
            f"TLS: the certificate of the server at {url} is not issued for '{host}' (host name check "
            f"failed): connect with the host name the certificate names (--url NAME:PORT) ({text})"
        )
    if (
        "certificate verify failed" in lowered
        or "unable to get local issuer" in lowered
        or "self signed" in lowered
    ):
        return (
            f"TLS: the certificate of the server at {url} is not trusted: give the certificate "
            f"authority that signed it with --root-certificates FILE ({text})"
        )
    return None


def _looks_like_tls_mismatch(lowered: str) -> bool:
    return any(s in lowered for s in ("ssl", "tls", "handshake", "wrong_version_number", "certificate"))


def unreachable_message(endpoint: Endpoint, detail: str, listener: str | None = None) -> str:
    """`listener`: what app.inference.transports.port_probe found on a port that closed the
    connection ("tls", "http", "grpc" or None when not probed / unknown)."""
    if endpoint.protocol is ServerProtocol.HTTP:
        return f"{_http_unreachable_lead(endpoint, detail, listener)} ({detail})"
    url, port = endpoint.url, endpoint.port
    over_http = same_server_over(endpoint, ServerProtocol.HTTP) or "http://HOST:PORT"
    lowered = detail.lower()
    closed = closed_by_peer(detail)
    if listener == "tls":
        lead = (
            f"cannot reach Triton at {url}: the server there speaks TLS. Add --ssl "
            "(and --root-certificates FILE for a private certificate authority)"
        )
    elif listener == "http" or "http1" in lowered or (not closed and port in ("8000", "80")):
        lead = (
            f"cannot reach Triton at {url} over gRPC: that is Triton's HTTP port: connect over "
            f"HTTP? (--url {over_http}; Triton's gRPC port is usually 8001)"
        )
    elif closed:
        # A plain gRPC client gets this from a TLS server and from Triton's HTTP port alike.
        tls_first = port in ("443", "8443")
        tls = "if the server uses TLS, add --ssl"
        http = f"if it is Triton's HTTP port, connect over HTTP (--url {over_http})"
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


def _http_unreachable_lead(endpoint: Endpoint, detail: str, listener: str | None) -> str:
    url, lowered = endpoint.url, detail.lower()
    if listener == "tls":
        return (
            f"cannot reach the server at {url}: it speaks TLS. Use https:// "
            "(and --root-certificates FILE for a private certificate authority)"
        )
    if listener == "grpc":
        return (
            f"cannot reach the server at {url} over HTTP: that is a gRPC port: connect over gRPC? "
            f"(--url {same_server_over(endpoint, ServerProtocol.GRPC) or 'HOST:PORT'}; Triton's HTTP port "
            "is usually 8000)"
        )
    if closed_by_peer(detail):
        return (
            f"cannot reach the server at {url}: it closed the connection, so it does not speak plain "
            "HTTP: if it uses TLS, use https://; if it is a gRPC port, drop http:// (gRPC)"
        )
    if "connection refused" in lowered:
        return (
            f"cannot reach the server at {url}: nothing is listening there. Is the server running, "
            f"and is {url} its HTTP port (Triton's is usually 8000)?"
        )
    return f"cannot reach the server at {url}"


def closed_by_peer(text: str) -> bool:
    """The server accepted the connection, then closed it: not a plain gRPC server (TLS, HTTP)."""
    lowered = text.lower()
    return "socket closed" in lowered or "connection reset" in lowered


def first_paragraph(text: str) -> str:
    """A server's reason without the Python traceback the backend appends ("\n\nAt:\n ...")."""
    return text.split("\n\nAt:")[0].strip()
