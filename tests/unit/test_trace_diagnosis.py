"""The diagnosis in words of one traced request, and its named timeline."""

from __future__ import annotations

from app.inference.tracing import spans as names
from app.inference.tracing.diagnosis import Finding, breakdown, diagnose
from app.inference.tracing.server_trace import ServerTrace
from app.inference.tracing.spans import ClientStage, RequestTrace, build_trace

MS = 1_000_000


def server(start: float, queue: float, compute: float, request_id: str = "r") -> ServerTrace:
    """A server trace on the client's clock: `queue` ms queued, then `compute` ms of infer."""
    t = int(start * MS)
    q, c = int(queue * MS), int(compute * MS)
    marks = {
        "REQUEST_START": t,
        "QUEUE_START": t,
        "COMPUTE_START": t + q,
        "COMPUTE_INPUT_END": t + q,
        "COMPUTE_OUTPUT_START": t + q + c,
        "COMPUTE_END": t + q + c,
        "REQUEST_END": t + q + c,
        "GRPC_SEND_START": t + q + c,
    }
    return ServerTrace("1", "m", "1", request_id, marks=marks)


def traced(
    stages: list[tuple[str, float, float]],
    srv: ServerTrace | None,
    send: float,
    reply: float,
    **facts: object,
) -> RequestTrace:
    trace = build_trace(
        "r",
        "m",
        [ClientStage(n, int(a * MS), int(b * MS)) for n, a, b in stages],
        srv,
        send_ns=int(send * MS),
        reply_ns=int(reply * MS),
    )
    trace.facts.update(facts)
    return trace


def test_a_full_window_is_named_with_its_wait_and_the_slots() -> None:
    trace = traced(
        [(names.SLOT_WAIT, 0, 31), (names.IN_FLIGHT, 31, 45)],
        server(32, 0.1, 12),
        31,
        45,
        in_flight=2,
        window=2,
    )
    first = diagnose(trace)[0]
    assert first.finding is Finding.WINDOW_FULL
    assert first.message == "waited 31.0 ms for a free slot: in flight 2 of 2"
    assert first.advice.startswith("the client is the limit") and "--concurrency" in first.advice
    labels = [p.label for p in breakdown(trace)]
    assert labels[0] == "waited 31.0 ms for a free slot: in flight 2 of 2"


def test_queueing_on_the_server_points_to_tune() -> None:
    trace = traced([(names.IN_FLIGHT, 0, 52)], server(1, 40, 10), 0, 52)
    (first, *_) = diagnose(trace)
    assert first.finding is Finding.SERVER_QUEUE
    assert first.message == "queued 40.0 ms on the server before its 10.0 ms of compute"
    assert "Tune" in first.advice and "instances" in first.advice


def test_a_slow_hand_over_to_the_gui_is_the_finding_not_the_compute() -> None:
    trace = traced(
        [(names.IN_FLIGHT, 0, 10), (names.HANDOVER, 10, 35), (names.PAINT, 35, 40)], server(1, 0, 8), 0, 10
    )
    assert diagnose(trace)[0].finding is Finding.SLOW_CALLBACK
    assert "30.0 ms from the reply to the screen" in diagnose(trace)[0].message


def test_a_network_share_larger_than_the_compute() -> None:
    trace = traced([(names.IN_FLIGHT, 0, 30)], server(12, 0, 5), 0, 30)
    assert trace.facts["network_ms"] == 25.0
    (first,) = diagnose(trace)
    assert first.finding is Finding.NETWORK and "25.0 ms, more than the 5.0 ms of compute" in first.message
    # In flight opened up: the way there, the server's part, the way back.
    assert [p.label for p in breakdown(trace)] == [
        "12.0 ms on the way to the server",
        "server 5.0 ms (m)",
        "13.0 ms for the reply to reach the client",
    ]


def test_a_retry_says_how_many_and_why() -> None:
    trace = traced(
        [
            (names.ATTEMPT, 0, 20),
            (names.RETRY_WAIT, 20, 120),
            (names.ATTEMPT, 120, 135),
            (names.IN_FLIGHT, 121, 135),
        ],
        server(122, 0, 12),
        121,
        135,
        attempts=2,
        retry_reason="UNAVAILABLE",
    )
    findings = {d.finding: d for d in diagnose(trace)}
    assert findings[Finding.RETRY].message == "retried 1 time after UNAVAILABLE: 120.0 ms of the request"
    assert diagnose(trace)[0].finding is Finding.RETRY  # the biggest share first


def test_the_compute_when_nothing_else_stands_out_and_no_server_trace_said() -> None:
    fine = traced([(names.PREPROCESS, 0, 1), (names.IN_FLIGHT, 1, 43)], server(1.5, 0.1, 40), 1, 43)
    (only,) = diagnose(fine)
    assert only.finding is Finding.COMPUTE and only.message.startswith(
        "the model's compute is most of it: 40.0"
    )
    alone = traced([(names.IN_FLIGHT, 0, 43)], None, 0, 43)
    assert [d.finding for d in diagnose(alone)] == [Finding.NO_SERVER]


def test_the_breakdown_names_the_gaps_between_stages() -> None:
    trace = traced([(names.PREPROCESS, 0, 2), (names.IN_FLIGHT, 5, 20), (names.DECODE, 20, 21)], None, 5, 20)
    parts = breakdown(trace)
    assert [p.name for p in parts] == [names.PREPROCESS, "gap", names.IN_FLIGHT, names.DECODE]
    assert parts[1].label == "3.0 ms unaccounted before in flight" and parts[1].start_ms == 2.0


def test_a_full_window_over_a_queueing_server_blames_the_server() -> None:
    trace = traced(
        [(names.SLOT_WAIT, 0, 40), (names.IN_FLIGHT, 40, 122)],
        server(41, 38, 41),
        40,
        122,
        in_flight=2,
        window=2,
    )
    findings = {d.finding: d for d in diagnose(trace)}
    assert findings[Finding.WINDOW_FULL].advice.startswith("the server is the limit")
    assert Finding.SERVER_QUEUE in findings
