"""HTTP/REST as the second protocol, against the session's real Triton server (its HTTP port)
and a small real proxy in front of it (tests/http_proxy.py): the same results as gRPC,
shared memory and client batching over HTTP, timeouts and cancel, retries of a reply cut
short mid-response until the deadline, a server without statistics or configuration, headers
and TLS, and the offer of the other protocol on the wrong port."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pytest
import skimage.data

from app.inference.core.session import TritonSession
from app.inference.core.spec import Delivery, SessionSpec, Timeouts
from app.inference.errors import ExtensionMissingError, SessionError
from app.inference.introspection.extensions import MISSING, Extension
from app.inference.protocol import ServerProtocol, parse_endpoints
from app.inference.result import ErrorKind, Status
from app.inference.transports.channel import ConnectionOptions
from app.inference.transports.transport import TransportKind
from app.server.embedded import EmbeddedServer
from tests.grpc_servers import self_signed_certificate
from tests.http_proxy import http_proxy
from tests.ui.viewer_fixtures import slow_image

MODEL = "fixed_efficientnms"


def http_url(triton: EmbeddedServer) -> str:
    return f"http://{triton.http_url}"


def boxes(result) -> list[tuple[tuple[float, ...], float, int]]:  # type: ignore[no-untyped-def]
    return [(tuple(round(v, 3) for v in d.box), round(d.score, 4), d.class_id) for d in result.detections]


@pytest.mark.parametrize("transport", [TransportKind.GRPC, TransportKind.SHM])
def test_http_gives_the_boxes_grpc_gives(triton: EmbeddedServer, transport: TransportKind) -> None:
    image = skimage.data.astronaut()
    with TritonSession(
        SessionSpec(
            endpoints=parse_endpoints(triton.grpc_url), model=MODEL, delivery=Delivery(transport=transport)
        )
    ) as grpc_session:
        expected = grpc_session.infer(image)
    with TritonSession(
        SessionSpec(
            endpoints=parse_endpoints(http_url(triton)), model=MODEL, delivery=Delivery(transport=transport)
        )
    ) as session:
        assert session.protocol is ServerProtocol.HTTP
        assert session.transport is not None and session.transport.kind is transport
        assert session.transport_note == ""
        # Triton declares the binary tensor extension: tensors travel as bytes, not JSON.
        assert session.wire.binary and session.notes == []
        if transport is TransportKind.GRPC:
            assert session.describe_transport() == "HTTP (binary tensors)"
        result = session.infer(image)
        counters = session.read_server_counters()
    assert result.ok and expected.ok, (result.error, expected.error)
    assert boxes(result) == boxes(expected)
    assert len(result.detections) == 2  # num_dets honoured: the garbage rows are not reported
    assert counters.requests > 0  # Triton's statistics over HTTP


def test_client_batching_over_http(triton: EmbeddedServer) -> None:
    images = [np.full((240, 320, 3), 40 * i, np.uint8) for i in range(8)]
    url = http_url(triton)
    # A generous batch delay: batches form however slowly a loaded machine prepares the images.
    with TritonSession(
        SessionSpec(
            endpoints=parse_endpoints(url),
            model=MODEL,
            delivery=Delivery(transport=TransportKind.GRPC, client_batch=4, batch_delay_ms=500),
        )
    ) as session:
        assert session.batching == 4
        futures = [session.submit_future(image) for image in images]
        results = [f.result(timeout=60) for f in futures]
    assert all(r.ok for r in results), [r.error for r in results]
    assert max(r.timing.batch for r in results if r.timing is not None) > 1
    assert {len(r.detections) for r in results} == {2}


def test_a_deadline_over_http_times_out_and_the_channel_goes_on(triton: EmbeddedServer) -> None:
    with TritonSession(
        SessionSpec(
            endpoints=parse_endpoints(http_url(triton)),
            model="slow_faces",
            timeouts=Timeouts(request_s=0.3),
            delivery=Delivery(transport=TransportKind.GRPC),
        )
    ) as session:
        late = session.infer(slow_image(1000))  # 1 s on the server
        assert late.status is Status.TIMEOUT and late.error_kind is ErrorKind.TIMEOUT
        quick = session.infer(slow_image(0))
    assert quick.ok, quick.error


def test_cancel_drops_the_request_on_the_client(triton: EmbeddedServer) -> None:
    with TritonSession(
        SessionSpec(
            endpoints=parse_endpoints(http_url(triton)),
            model="slow_faces",
            timeouts=Timeouts(request_s=30),
            delivery=Delivery(transport=TransportKind.GRPC),
        )
    ) as session:
        ended = threading.Event()
        results = []

        def done(result) -> None:  # type: ignore[no-untyped-def]
            results.append(result)
            ended.set()

        request_id = session.submit(slow_image(2000), done)  # 2 s on the server
        assert request_id is not None
        time.sleep(0.2)  # on the wire
        assert session.cancel(request_id), [(r.status, r.error) for r in results]
        assert ended.wait(5)
        after = session.infer(slow_image(0))  # the channel is still usable
    assert [r.status for r in results] == [Status.CANCELLED]
    assert after.ok, after.error


def test_a_reply_cut_short_mid_response_is_retried_until_it_gets_through(triton: EmbeddedServer) -> None:
    with http_proxy(triton.http_port) as proxy:
        with TritonSession(
            SessionSpec(
                endpoints=parse_endpoints(proxy.url),
                model=MODEL,
                timeouts=Timeouts(request_s=20),
                delivery=Delivery(transport=TransportKind.GRPC),
            )
        ) as session:
            proxy.rules.resets_left = 2
            result = session.infer(skimage.data.astronaut())
        assert proxy.rules.resets_done == 2
    assert result.ok, result.error
    assert result.retries == 2
    assert len(result.detections) == 2


def test_replies_cut_short_until_the_deadline_fail_as_unreachable(triton: EmbeddedServer) -> None:
    with http_proxy(triton.http_port) as proxy:
        with TritonSession(
            SessionSpec(
                endpoints=parse_endpoints(proxy.url),
                model=MODEL,
                timeouts=Timeouts(request_s=2),
                delivery=Delivery(transport=TransportKind.GRPC),
            )
        ) as session:
            proxy.rules.resets_left = -1  # every reply
            result = session.infer(skimage.data.astronaut())
        resets = proxy.rules.resets_done
    assert resets > 1 and result.retries >= resets - 1  # retried, until the deadline stopped it
    if result.status is Status.TIMEOUT:  # the deadline came during the last attempt (a slow machine)
        assert result.error_kind is ErrorKind.TIMEOUT, result.error
        return
    assert result.status is Status.FAILED and result.error_kind is ErrorKind.UNREACHABLE, result.error
    assert (
        "closed" in (result.error or "")
        or "reset" in (result.error or "")
        or "cut short" in (result.error or "")
    )


def test_a_server_that_answers_404_to_statistics_and_config(triton: EmbeddedServer) -> None:
    with http_proxy(triton.http_port) as proxy:
        proxy.rules.statistics_404 = proxy.rules.config_404 = True
        with TritonSession(
            SessionSpec(
                endpoints=parse_endpoints(proxy.url),
                model="fixed_yolov8",
                delivery=Delivery(transport=TransportKind.GRPC),
            )
        ) as session:
            result = session.infer(skimage.data.astronaut())
            # The model list read every model's statistics once already (uploaded models).
            before = sum(1 for path, _ in proxy.rules.headers if path.endswith("/stats"))
            with pytest.raises(ExtensionMissingError) as caught:
                session.read_server_counters()
            asked = sum(1 for path, _ in proxy.rules.headers if path.endswith("/stats")) - before
            with pytest.raises(ExtensionMissingError):
                session.read_server_counters()  # known missing: not asked again
            asked_again = sum(1 for path, _ in proxy.rules.headers if path.endswith("/stats")) - before
            notes = session.notes
            assert session.info is not None and not session.info.config_known
    assert str(caught.value) == "server statistics not available from this server"
    assert asked == asked_again == 1
    assert MISSING[Extension.CONFIG] in notes and MISSING[Extension.STATISTICS] in notes
    # The profile from the metadata alone still reads the raw YOLO output.
    assert result.ok, result.error
    assert [d.label for d in result.detections] == ["person", "car"]


def test_without_a_model_list_the_model_named_is_checked_with_model_ready(triton: EmbeddedServer) -> None:
    with http_proxy(triton.http_port) as proxy:
        proxy.rules.index_404 = True
        with pytest.raises(SessionError) as unnamed:
            TritonSession(SessionSpec(endpoints=parse_endpoints(proxy.url))).open()
        with pytest.raises(SessionError) as not_ready:
            TritonSession(SessionSpec(endpoints=parse_endpoints(proxy.url), model="broken_at_load")).open()
        with TritonSession(
            SessionSpec(
                endpoints=parse_endpoints(proxy.url),
                model=MODEL,
                delivery=Delivery(transport=TransportKind.GRPC),
            )
        ) as session:
            result = session.infer(skimage.data.astronaut())
            notes, models = session.notes, [m.name for m in session.models]
        asked_ready = [path for path, _ in proxy.rules.headers if path.endswith("/ready")]
    assert unnamed.value.kind is ErrorKind.NOT_FOUND and "--model" in str(unnamed.value)
    assert "gives no model list" in str(unnamed.value)
    assert not_ready.value.kind is ErrorKind.NOT_FOUND and "ModelReady" in str(not_ready.value)
    assert f"/v2/models/{MODEL}/ready" in asked_ready
    assert result.ok and len(result.detections) == 2, result.error
    assert MISSING[Extension.REPOSITORY] in notes and models == [MODEL]


def test_headers_reach_every_http_call_and_never_a_message(triton: EmbeddedServer) -> None:
    secret = "Bearer http-s3cret"
    options = ConnectionOptions(headers={"authorization": secret, "x-trace-bin": b"\x00\x01\xfe\xff"})
    with http_proxy(triton.http_port) as proxy:
        with TritonSession(
            SessionSpec(
                endpoints=parse_endpoints(proxy.url),
                model=MODEL,
                connection=options,
                delivery=Delivery(transport=TransportKind.GRPC),
            )
        ) as session:
            result = session.infer(skimage.data.astronaut())
        calls = list(proxy.rules.headers)
    assert result.ok, result.error
    paths = [path for path, _ in calls]
    assert "/v2/health/live" in paths and any(p.endswith("/infer") for p in paths)
    for path, headers in calls:
        assert headers.get("authorization") == secret, path
        assert headers.get("x-trace-bin") == "AAH+/w==", path  # bytes travel as base64 text


def test_tls_over_http_with_a_self_signed_certificate(triton: EmbeddedServer, tmp_path: Path) -> None:
    key, cert = self_signed_certificate(tmp_path)
    with http_proxy(triton.http_port, certificate=(key, cert)) as proxy:
        assert proxy.url.startswith("https://")
        options = ConnectionOptions(root_certificates=str(cert), headers={"authorization": "Bearer t"})
        with TritonSession(
            SessionSpec(
                endpoints=parse_endpoints(proxy.url),
                model=MODEL,
                connection=options,
                delivery=Delivery(transport=TransportKind.GRPC),
            )
        ) as session:
            result = session.infer(skimage.data.astronaut())
        assert result.ok, result.error
        assert proxy.rules.headers[-1][1]["authorization"] == "Bearer t"
        # Without the certificate authority: a TLS failure, said as such.
        with pytest.raises(SessionError) as unknown_ca:
            TritonSession(
                SessionSpec(endpoints=parse_endpoints(proxy.url), model=MODEL, timeouts=Timeouts(request_s=3))
            ).open()
        assert unknown_ca.value.kind is ErrorKind.TLS
        # Plain HTTP to the TLS port: told to use https://.
        plain = proxy.url.replace("https://", "http://")
        with pytest.raises(SessionError) as caught:
            TritonSession(
                SessionSpec(endpoints=parse_endpoints(plain), model=MODEL, timeouts=Timeouts(request_s=3))
            ).open()
    assert caught.value.kind is ErrorKind.TLS
    assert "https://" in str(caught.value)


def test_grpc_on_the_http_port_offers_http_and_http_on_the_grpc_port_offers_grpc(
    triton: EmbeddedServer,
) -> None:
    with pytest.raises(SessionError) as on_http_port:
        TritonSession(
            SessionSpec(endpoints=parse_endpoints(triton.http_url), timeouts=Timeouts(request_s=3))
        ).open()
    assert on_http_port.value.offer == http_url(triton)
    assert "that is Triton's HTTP port: connect over HTTP?" in str(on_http_port.value)
    with pytest.raises(SessionError) as on_grpc_port:
        TritonSession(
            SessionSpec(
                endpoints=parse_endpoints(f"http://{triton.grpc_url}"), timeouts=Timeouts(request_s=3)
            )
        ).open()
    assert on_grpc_port.value.offer == triton.grpc_url
    assert "connect over gRPC?" in str(on_grpc_port.value)
    # The offer works.
    with TritonSession(
        SessionSpec(endpoints=parse_endpoints(on_http_port.value.offer), model=MODEL)
    ) as session:
        assert session.infer(skimage.data.astronaut()).ok


def test_nothing_listening_over_http_is_retried_then_named(triton: EmbeddedServer) -> None:
    from app.server.ports import free_ports

    (port,) = free_ports(1)
    with pytest.raises(SessionError) as caught:
        TritonSession(
            SessionSpec(endpoints=parse_endpoints(f"http://127.0.0.1:{port}"), timeouts=Timeouts(request_s=2))
        ).open()
    assert caught.value.kind is ErrorKind.UNREACHABLE
    assert "nothing is listening" in str(caught.value) and "HTTP port" in str(caught.value)


@pytest.mark.parametrize("header", ["Content-Length", "Inference-Header-Content-Length"])
def test_a_reply_announcing_more_than_the_output_limit_is_refused_as_too_large(
    triton: EmbeddedServer, header: str
) -> None:
    """A server announcing a 400 MB reply: refused from its headers, before the body is read
    (the body never comes: the proxy sends the real, small one and closes), as too_large."""
    announced = 400_000_000
    with (
        http_proxy(triton.http_port) as proxy,
        TritonSession(
            SessionSpec(
                endpoints=parse_endpoints(proxy.url),
                model=MODEL,
                timeouts=Timeouts(request_s=20),
                delivery=Delivery(transport=TransportKind.GRPC),
            )
        ) as session,
    ):
        if header == "Content-Length":
            proxy.rules.announce_length = announced
        else:
            proxy.rules.announce_header_length = announced
        result = session.infer(skimage.data.astronaut())
        proxy.rules.announce_length = proxy.rules.announce_header_length = 0
        after = session.infer(skimage.data.astronaut())
    assert result.status is Status.FAILED and result.error_kind is ErrorKind.TOO_LARGE, result.error
    assert "a reply of 400.0 MB" in (result.error or "") and "268.4 MB of outputs" in (result.error or "")
    assert result.retries == 0  # not retried: the same request gets the same reply
    assert after.ok, after.error  # the channel goes on
