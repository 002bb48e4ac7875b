"""The failure classifier: which status, which hint, retried or not."""

from __future__ import annotations

import pytest
from tritonclient.utils import InferenceServerException

from app.inference.errors import classify_failure, first_paragraph, redact
from app.inference.protocol import parse_url
from app.inference.result import ErrorKind, InferenceResult, Status, naming_input

URL = parse_url("10.0.0.5:8001")


def error(message: str, status: str) -> InferenceServerException:
    return InferenceServerException(msg=message, status=status)


@pytest.mark.parametrize(
    ("message", "status", "expected_status", "hint", "transient"),
    [
        ("Deadline Exceeded", "StatusCode.DEADLINE_EXCEEDED", Status.TIMEOUT, "timed out", False),
        ("Locally cancelled by application!", "StatusCode.CANCELLED", Status.CANCELLED, "cancelled", False),
        (
            "Received message larger than max (8294400 vs. 4194304)",
            "StatusCode.RESOURCE_EXHAUSTED",
            Status.FAILED,
            "message too large",
            False,
        ),
        (
            "failed to connect to all addresses; last error: UNKNOWN: Connection refused",
            "StatusCode.UNAVAILABLE",
            Status.FAILED,
            "nothing is listening",
            True,
        ),
        (
            "failed to connect to all addresses; last error: UNAVAILABLE: Socket closed",
            "StatusCode.UNAVAILABLE",
            Status.FAILED,
            "HTTP port",
            True,
        ),
        (
            # Triton's Python backend after a pause (SIGSTOP/SIGCONT): retried until the deadline.
            "Stub process 'face_detector_0_0' is not healthy.",
            "StatusCode.INTERNAL",
            Status.FAILED,
            "is not healthy",
            True,
        ),
        (
            "Tls handshake failed (TSI_PROTOCOL_FAILURE): WRONG_VERSION_NUMBER",
            "StatusCode.UNAVAILABLE",
            Status.FAILED,
            "TLS mismatch",
            False,
        ),
        (
            "Stream removed (CLIENT: Received message larger than max (4800932 vs. 2097152))",
            "StatusCode.RESOURCE_EXHAUSTED",
            Status.FAILED,
            "the model's output is too large: a reply of 4.8 MB from 10.0.0.5:8001; at most 1.0 MB",
            False,
        ),
        (
            "shared memory size specified with the request for output 'det_scores' (400 bytes) "
            "should be at least 800 bytes to hold the results",
            "StatusCode.INTERNAL",
            Status.FAILED,
            "output 'det_scores' is larger than the model declares",
            False,
        ),
        (
            "unexpected shape for input 'image'",
            "StatusCode.INVALID_ARGUMENT",
            Status.FAILED,
            "unexpected shape",
            False,
        ),
    ],
)
def test_classify(message: str, status: str, expected_status: Status, hint: str, transient: bool) -> None:
    failure = classify_failure(error(message, status), URL)
    assert failure.status is expected_status
    assert hint in failure.message
    assert failure.transient is transient


def test_invalid_input_is_never_retried_but_an_unreachable_server_is() -> None:
    assert not classify_failure(error("bad input", "StatusCode.INVALID_ARGUMENT"), URL).transient
    assert classify_failure(
        error("failed to connect to all addresses", "StatusCode.UNAVAILABLE"), URL
    ).transient


def test_secrets_are_redacted_from_messages() -> None:
    failure = classify_failure(
        error("auth failed for token abc123secret", "StatusCode.UNAUTHENTICATED"), URL, ["abc123secret"]
    )
    assert "abc123secret" not in failure.message and "***" in failure.message


def test_first_paragraph_drops_the_backend_traceback() -> None:
    reason = "Internal: RuntimeError: weights missing\n\nAt:\n  model.py(6): initialize"
    assert first_paragraph(reason) == "Internal: RuntimeError: weights missing"
    assert redact("short", ["ab"]) == "short"  # too short to redact safely


def test_messages_name_their_input_once() -> None:
    assert naming_input("a.jpg", "a.jpg: corrupt") == "a.jpg: corrupt"
    assert naming_input("a.jpg", "deadline exceeded") == "a.jpg: deadline exceeded"
    assert naming_input("v.mp4", "deadline exceeded", frame=3) == "v.mp4 frame 3: deadline exceeded"
    assert naming_input(None, "boom") == "request: boom"


def test_a_port_that_closes_the_connection_gets_the_hint_of_what_listens_there() -> None:
    from app.inference.errors import unreachable_message

    detail = "failed to connect to all addresses; last error: UNAVAILABLE: Socket closed"
    tls = unreachable_message(parse_url("h:443"), detail, "tls")
    assert "speaks TLS" in tls and "--ssl" in tls and "HTTP port" not in tls
    http = unreachable_message(parse_url("h:9000"), detail, "http")
    assert "that is Triton's HTTP port: connect over HTTP?" in http and "--ssl" not in http
    assert "--url http://h:9000" in http
    # Not probed: both causes, the likelier first (TLS on 443, the HTTP port elsewhere).
    unknown_443 = unreachable_message(parse_url("h:443"), detail)
    assert unknown_443.index("--ssl") < unknown_443.index("HTTP port")
    unknown_8000 = unreachable_message(parse_url("h:8000"), detail)
    assert unknown_8000.index("HTTP port") < unknown_8000.index("--ssl")


def test_an_http_client_is_told_what_listens_in_http_terms() -> None:
    from app.inference.errors import unreachable_message

    grpc_port = unreachable_message(parse_url("http://h:8001"), "the server closed the connection", "grpc")
    assert "that is a gRPC port: connect over gRPC?" in grpc_port and "--url h:8001" in grpc_port
    tls = unreachable_message(parse_url("http://h:8443"), "the server closed the connection", "tls")
    assert "https://" in tls and "--ssl" not in tls
    refused = unreachable_message(parse_url("http://h:8000"), "connection refused")
    assert "nothing is listening" in refused and "HTTP port" in refused and "8001" not in refused


@pytest.mark.parametrize(
    ("status", "code", "missing"),
    [
        ("StatusCode.UNIMPLEMENTED", "UNIMPLEMENTED", True),
        ("StatusCode.NOT_FOUND", "NOT_FOUND", False),
        ("404", "NOT_FOUND", True),
        ("400", "INVALID_ARGUMENT", True),
        ("501", "UNIMPLEMENTED", True),
        ("503", "UNAVAILABLE", False),
        ("502", "UNAVAILABLE", False),
        ("500", "INTERNAL", False),
        ("504", "DEADLINE_EXCEEDED", False),
        ("UNAVAILABLE", "UNAVAILABLE", False),  # the HTTP channel's own failures
    ],
)
def test_status_codes_of_both_protocols_are_one_vocabulary(status: str, code: str, missing: bool) -> None:
    from app.inference.errors import extension_missing, status_code

    e = error("whatever the text says", status)
    assert status_code(e) == code
    assert extension_missing(e) is missing
    assert classify_failure(e, parse_url("http://h:8000")).unimplemented is missing


def test_http_statuses_classify_like_their_grpc_codes() -> None:
    http = parse_url("http://h:8000")
    assert classify_failure(error("Service Unavailable", "503"), http).transient
    assert classify_failure(error("bad gateway", "502"), http).kind is ErrorKind.UNREACHABLE
    assert classify_failure(error("unexpected shape", "400"), http).kind is ErrorKind.BAD_INPUT
    assert classify_failure(error("Request for unknown model", "404"), http).kind is ErrorKind.NOT_FOUND
    assert classify_failure(error("too big", "413"), http).kind is ErrorKind.TOO_LARGE
    assert classify_failure(error("slow", "504"), http).status is Status.TIMEOUT


def test_the_flags_callers_decide_on_come_from_the_classifier() -> None:
    closed = classify_failure(
        error(
            "failed to connect to all addresses; last error: UNAVAILABLE: Socket closed",
            "StatusCode.UNAVAILABLE",
        ),
        URL,
    )
    assert closed.closed_by_peer and not closed.name_unknown
    refused = classify_failure(error("Connection refused", "StatusCode.UNAVAILABLE"), URL)
    assert not refused.closed_by_peer
    lost = classify_failure(
        error("Unable to find system shared memory region: 'tviewer-c1-0'", "StatusCode.INTERNAL"), URL
    )
    assert lost.regions_lost and lost.name_unknown and lost.transient
    # Unregistering a region the server never had: nothing to undo (not an error to raise).
    unknown = classify_failure(RuntimeError("region 'x' not found"), URL)
    assert unknown.name_unknown and not unknown.regions_lost
    assert not classify_failure(error("region is still in use", "StatusCode.INTERNAL"), URL).name_unknown


def test_a_record_that_is_not_ok_names_its_error_kind() -> None:
    failed = InferenceResult(None, Status.FAILED, "a.jpg", error="x", error_kind=ErrorKind.BAD_INPUT)
    assert failed.to_record()["error_kind"] == "bad_input"
    # A result that came without a kind: its status gives it.
    assert InferenceResult("1", Status.TIMEOUT, "a.jpg", error="t").to_record()["error_kind"] == "timeout"
    ok = InferenceResult("2", Status.OK, "a.jpg").to_record()
    assert "error_kind" not in ok and ok["error"] is None


def test_current_triton_refusals_name_what_to_give_and_are_not_retried() -> None:
    from app.inference.errors import client_shm_disabled, restricted_header

    grpc_url, http_url = parse_url("127.0.0.1:8001"), parse_url("http://127.0.0.1:8000")
    refused = InferenceServerException(
        "This protocol is restricted, expecting header 'admin-key'", status="StatusCode.UNAVAILABLE"
    )
    failure = classify_failure(refused, grpc_url)
    assert not failure.transient and failure.kind is ErrorKind.SERVER  # not an outage
    assert "--grpc-restricted-protocol" in failure.message
    assert "--restricted-header admin-key=VALUE" in failure.message
    assert restricted_header(refused) == "admin-key"
    over_http = InferenceServerException("This API is restricted, expecting header 'k'", status="403")
    assert "--http-restricted-api" in classify_failure(over_http, http_url).message
    disabled = InferenceServerException(
        "Client shared memory is disabled. Start the server with '--allow-client-shm=true' to enable.",
        status="StatusCode.UNIMPLEMENTED",
    )
    assert client_shm_disabled(disabled) and not client_shm_disabled(refused)
    assert "--allow-client-shm=true" in classify_failure(disabled, grpc_url).message
