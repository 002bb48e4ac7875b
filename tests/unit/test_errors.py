"""The failure classifier: which status, which hint, retried or not."""

from __future__ import annotations

import pytest
from tritonclient.utils import InferenceServerException

from app.inference.errors import classify_failure, first_paragraph, redact
from app.inference.result import ErrorKind, InferenceResult, Status, naming_input

URL = "10.0.0.5:8001"


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
    tls = unreachable_message("h:443", detail, "tls")
    assert "speaks TLS" in tls and "--ssl" in tls and "HTTP port" not in tls
    http = unreachable_message("h:9000", detail, "http")
    assert "Is this Triton's HTTP port?" in http and "--ssl" not in http
    # Not probed: both causes, the likelier first (TLS on 443, the HTTP port elsewhere).
    unknown_443 = unreachable_message("h:443", detail)
    assert unknown_443.index("--ssl") < unknown_443.index("HTTP port")
    unknown_8000 = unreachable_message("h:8000", detail)
    assert unknown_8000.index("HTTP port") < unknown_8000.index("--ssl")


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
