"""TritonSession against the real server: modes, ids, timeouts, cancellation, window, close."""

from __future__ import annotations

import socket
import threading
import time

import numpy as np
import pytest
import skimage.data

from app.inference.core.session import SessionState, TritonSession
from app.inference.core.spec import Limits, SessionSpec, Timeouts
from app.inference.errors import SessionClosedError, SessionError, redact
from app.inference.protocol import parse_endpoints
from app.inference.result import Status
from app.inference.transports.channel import ConnectionOptions
from app.server.embedded import EmbeddedServer
from app.server.ports import free_ports
from tests.integration.face_check import detect_faces
from tests.integration.session_helpers import (
    Collector,
    assert_each_ended_once,
    delayed_image,
    hammer,
    wait_until,
)


def test_open_discovers_the_face_detector_and_its_profile(triton: EmbeddedServer) -> None:
    with TritonSession(SessionSpec(endpoints=parse_endpoints(triton.grpc_url))) as session:
        assert session.info is not None
        assert session.info.name == "face_detector"
        assert session.info.max_batch_size == 8
        assert session.info.dynamic_batching is not None
        assert session.profile.output_format == "efficientnms"
        assert session.profile.labels == ("face",)
        names = {m.name for m in session.models}
        assert {"face_detector", "slow_faces", "broken_at_load"} <= names


def test_callback_mode_delivers_the_face_off_the_callers_thread(triton: EmbeddedServer) -> None:
    photo = skimage.data.astronaut()
    expected, _ = detect_faces(triton.grpc_url, photo)
    collect = Collector()
    with TritonSession(SessionSpec(endpoints=parse_endpoints(triton.grpc_url))) as session:
        request_id = session.submit(photo, collect, source="astronaut.png", tag="my-tag")
        (result,) = collect.wait_for(1)
    assert result.request_id == request_id
    assert result.ok and result.source == "astronaut.png" and result.tag == "my-tag"
    assert (result.width, result.height) == (512, 512)
    assert [d.label for d in result.detections] == ["face"]
    # The session sends a 256-px copy (the model's max_input_side): within 2 px of the full image.
    assert np.allclose(result.detections[0].box, expected[0], atol=2.0)
    assert threading.main_thread().name not in collect.threads
    assert result.latency_ms is not None and result.latency_ms > 0


def test_future_and_blocking_modes(triton: EmbeddedServer) -> None:
    with TritonSession(SessionSpec(endpoints=parse_endpoints(triton.grpc_url))) as session:
        future = session.submit_future(skimage.data.astronaut(), source="a")
        coffee = session.infer(skimage.data.coffee(), source="c")
        astronaut = future.result(timeout=30)
    assert astronaut.ok and len(astronaut.detections) == 1
    assert coffee.ok and coffee.detections == []
    assert astronaut.request_id != coffee.request_id


def test_request_ids_are_unique_and_every_result_carries_its_own(triton: EmbeddedServer) -> None:
    collect = Collector()
    with TritonSession(
        SessionSpec(endpoints=parse_endpoints(triton.grpc_url), model="slow_faces")
    ) as session:
        ids = [session.submit(delayed_image(0), collect, frame=i) for i in range(50)]
        results = collect.wait_for(50)
    assert len(set(ids)) == 50
    assert {r.request_id: r.frame for r in results} == {rid: i for i, rid in enumerate(ids)}


def test_per_request_timeout(triton: EmbeddedServer) -> None:
    with TritonSession(
        SessionSpec(
            endpoints=parse_endpoints(triton.grpc_url), model="slow_faces", timeouts=Timeouts(request_s=5)
        )
    ) as session:
        slow = session.infer(delayed_image(1500), timeout_s=0.2)
        fast = session.infer(delayed_image(0), timeout_s=5)
    assert slow.status is Status.TIMEOUT and "deadline" in (slow.error or "")
    assert fast.ok


def test_cancel_one_and_cancel_all(triton: EmbeddedServer) -> None:
    collect = Collector()
    with TritonSession(
        SessionSpec(endpoints=parse_endpoints(triton.grpc_url), model="slow_faces")
    ) as session:
        first = session.submit(delayed_image(2000), collect)
        assert first is not None
        assert session.cancel(first)
        assert not session.cancel(first), "a finished request cannot be cancelled again"
        for _ in range(5):
            session.submit(delayed_image(2000), collect)
        assert session.cancel_all() == 5
        results = collect.wait_for(6)
        assert session.in_flight == 0
    assert [r.status for r in results] == [Status.CANCELLED] * 6
    assert collect.deliveries.most_common(1)[0][1] == 1


def test_a_failing_model_is_an_error_and_is_not_retried(triton: EmbeddedServer) -> None:
    with TritonSession(
        SessionSpec(endpoints=parse_endpoints(triton.grpc_url), model="failing", timeouts=Timeouts(retries=3))
    ) as session:
        result = session.infer(delayed_image(0), source="x.png")
        snapshot = session.stats.snapshot()
    assert result.status is Status.FAILED
    assert "inference always fails" in (result.error or "")
    assert result.retries == 0 and snapshot.retried == 0 and snapshot.failed == 1


def test_bad_input_is_an_error_naming_the_input(triton: EmbeddedServer) -> None:
    with TritonSession(SessionSpec(endpoints=parse_endpoints(triton.grpc_url))) as session:
        bad = session.infer(np.zeros((10, 10), np.float32), source="weird.tif")
        good = session.infer(skimage.data.astronaut(), source="fine.png")
    assert bad.status is Status.FAILED and "weird.tif" in (bad.error or "")
    assert good.ok


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("broken_at_load", "refuses to load"),
        ("no_such_model", "models there: broken_at_load, face_detector"),
    ],
)
def test_model_diagnostics(triton: EmbeddedServer, model: str, expected: str) -> None:
    with pytest.raises(SessionError, match=expected):
        TritonSession(SessionSpec(endpoints=parse_endpoints(triton.grpc_url), model=model)).open()


def test_nothing_listening_and_http_port_diagnostics(triton: EmbeddedServer) -> None:
    (port,) = free_ports(1)
    with pytest.raises(SessionError, match="nothing is listening"):
        TritonSession(
            SessionSpec(endpoints=parse_endpoints(f"127.0.0.1:{port}"), timeouts=Timeouts(request_s=2))
        ).open()
    with pytest.raises(SessionError, match="HTTP port"):
        TritonSession(
            SessionSpec(endpoints=parse_endpoints(triton.http_url), timeouts=Timeouts(request_s=2))
        ).open()


def test_the_window_bounds_requests_in_flight(triton: EmbeddedServer) -> None:
    collect = Collector()
    with TritonSession(
        SessionSpec(
            endpoints=parse_endpoints(triton.grpc_url), model="slow_faces", limits=Limits(max_in_flight=4)
        )
    ) as session:
        accepted = [session.submit(delayed_image(500), collect, block=False) for _ in range(10)]
        in_flight_when_full = session.in_flight
        assert accepted[:4] == [a for a in accepted[:4] if a] and accepted[4:] == [None] * 6
        # A blocking submit waits for a slot instead.
        late = session.submit(delayed_image(0), collect, block=True, wait_s=10)
        collect.wait_for(5)
    assert in_flight_when_full == 4
    assert late is not None
    assert session.stats.snapshot().sent == 5


def test_close_drains_within_the_bound_then_cancels(triton: EmbeddedServer) -> None:
    quick, slow = Collector(), Collector()
    session = TritonSession(
        SessionSpec(endpoints=parse_endpoints(triton.grpc_url), model="slow_faces")
    ).open()
    for _ in range(8):
        session.submit(delayed_image(200), quick)
    session.close(drain_timeout=10)
    assert [r.status for r in quick.results] == [Status.OK] * 8

    session = TritonSession(
        SessionSpec(endpoints=parse_endpoints(triton.grpc_url), model="slow_faces")
    ).open()
    for _ in range(8):
        session.submit(delayed_image(2500), slow)
    started = time.monotonic()
    session.close(drain_timeout=0.1)
    took = time.monotonic() - started
    session.close()  # idempotent
    assert [r.status for r in slow.results] == [Status.CANCELLED] * 8
    assert took < 2.0, "closing must not wait for the slow model"
    with pytest.raises(SessionClosedError):
        session.submit(delayed_image(0), slow)


@pytest.mark.parametrize("send_in_caller", [False, True], ids=["worker-sends", "caller-sends"])
def test_every_request_ends_exactly_once_under_concurrency_64(
    triton: EmbeddedServer, send_in_caller: bool
) -> None:
    with TritonSession(
        SessionSpec(
            endpoints=parse_endpoints(triton.grpc_url),
            model="slow_faces",
            limits=Limits(max_in_flight=64, send_in_caller=send_in_caller),
            timeouts=Timeouts(request_s=5),
        )
    ) as session:
        collect, ids = hammer(session, 400, seed=7)
        snapshot = session.stats.snapshot()
    statuses = assert_each_ended_once(collect, ids)
    assert snapshot.in_flight == 0
    assert (snapshot.ok, snapshot.timed_out, snapshot.cancelled) == (
        statuses[Status.OK],
        statuses[Status.TIMEOUT],
        statuses[Status.CANCELLED],
    )


def test_stats_count_and_time_what_happened(triton: EmbeddedServer) -> None:
    with TritonSession(
        SessionSpec(endpoints=parse_endpoints(triton.grpc_url), model="slow_faces")
    ) as session:
        for _ in range(20):
            session.infer(delayed_image(50))
        session.infer(delayed_image(1000), timeout_s=0.1)
        snapshot = session.stats.snapshot()
    assert (snapshot.sent, snapshot.ok, snapshot.timed_out, snapshot.in_flight) == (21, 20, 1, 0)
    assert snapshot.p50_ms is not None and snapshot.p50_ms >= 40  # the model sleeps 50 ms
    assert snapshot.p50_ms <= snapshot.p95_ms <= snapshot.p99_ms  # type: ignore[operator]
    assert snapshot.throughput > 0


def test_tls_against_a_plain_server_says_tls_mismatch(triton: EmbeddedServer) -> None:
    with pytest.raises(SessionError, match="TLS mismatch") as caught:
        TritonSession(
            SessionSpec(
                endpoints=parse_endpoints(triton.grpc_url),
                connection=ConnectionOptions(ssl=True),
                timeouts=Timeouts(request_s=3),
            )
        ).open()
    assert "--ssl" in str(caught.value)


def test_headers_are_sent_and_their_values_never_shown(triton: EmbeddedServer) -> None:
    secret = "Bearer s3cr3t-t0ken-value"
    options = ConnectionOptions(headers={"authorization": secret})
    with TritonSession(
        SessionSpec(endpoints=parse_endpoints(triton.grpc_url), connection=options)
    ) as session:
        assert session.infer(skimage.data.astronaut()).ok
    assert (
        redact(f"call failed with authorization: {secret}", [secret]) == "call failed with authorization: ***"
    )


def test_close_interrupts_a_connect_that_hangs() -> None:
    # A port that accepts TCP connections but never answers: open() would wait for its deadline.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        session = TritonSession(
            SessionSpec(
                endpoints=parse_endpoints(f"127.0.0.1:{silent.getsockname()[1]}"),
                timeouts=Timeouts(request_s=30),
            )
        )
        errors: list[BaseException] = []
        opener = threading.Thread(target=lambda: _open_into(session, errors))
        opener.start()
        # Close once open() is under way (closing before it starts is another case).
        assert wait_until(lambda: session.state is SessionState.OPENING, 5)
        session.close()
        opener.join(timeout=5)
        assert not opener.is_alive(), "open() returned once the session was closed"
    assert len(errors) == 1 and isinstance(errors[0], SessionClosedError)
    assert session.state is SessionState.CLOSED


def test_close_before_open_makes_open_fail_as_closed() -> None:
    session = TritonSession(
        SessionSpec(endpoints=parse_endpoints("127.0.0.1:1"), timeouts=Timeouts(request_s=1))
    )
    session.close()
    with pytest.raises(SessionClosedError):
        session.open()
    session.close()  # idempotent
    assert session.state is SessionState.CLOSED


def _open_into(session: TritonSession, errors: list[BaseException]) -> None:
    try:
        session.open()
    except BaseException as e:
        errors.append(e)
