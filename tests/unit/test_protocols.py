"""The protocol chosen by a URL's scheme, and what a server has of Triton's extensions."""

from __future__ import annotations

import pytest

from app.inference.core.spec import SessionSpec
from app.inference.introspection.discovery import normal_state
from app.inference.introspection.extensions import MISSING, Extension, ServerFeatures
from app.inference.protocol import ServerProtocol, UrlError, parse_url, protocol_of, same_server_over
from app.inference.transports.http_channel import http_headers


@pytest.mark.parametrize(
    ("url", "protocol", "address", "tls", "host", "port"),
    [
        ("127.0.0.1:8001", ServerProtocol.GRPC, "127.0.0.1:8001", False, "127.0.0.1", "8001"),
        ("grpc://h:8001", ServerProtocol.GRPC, "h:8001", False, "h", "8001"),
        ("http://h:8000", ServerProtocol.HTTP, "h:8000", False, "h", "8000"),
        ("http://h:8000/", ServerProtocol.HTTP, "h:8000", False, "h", "8000"),
        ("HTTPS://h:443", ServerProtocol.HTTP, "h:443", True, "h", "443"),
        (
            "https://ingress.example/triton",
            ServerProtocol.HTTP,
            "ingress.example/triton",
            True,
            "ingress.example",
            "",
        ),
        ("[::1]:8001", ServerProtocol.GRPC, "[::1]:8001", False, "::1", "8001"),
        ("http://[::1]:8000", ServerProtocol.HTTP, "[::1]:8000", False, "::1", "8000"),
        ("localhost", ServerProtocol.GRPC, "localhost", False, "localhost", ""),
    ],
)
def test_the_scheme_chooses_the_protocol(
    url: str, protocol: ServerProtocol, address: str, tls: bool, host: str, port: str
) -> None:
    endpoint = parse_url(url)
    assert (endpoint.protocol, endpoint.address, endpoint.tls) == (protocol, address, tls)
    assert (endpoint.host, endpoint.port) == (host, port)
    assert protocol_of(url) is protocol


@pytest.mark.parametrize("url", ["ftp://h:21", "http://", "grpc://h:8001/path", "http://:8000"])
def test_an_unusable_url_is_refused_with_its_reason(url: str) -> None:
    with pytest.raises(UrlError, match=url.split("/")[0]):
        parse_url(url)


def test_the_offer_reaches_the_same_host_over_the_other_protocol() -> None:
    assert same_server_over("127.0.0.1:8000", ServerProtocol.HTTP) == "http://127.0.0.1:8000"
    assert same_server_over("http://h:8001", ServerProtocol.GRPC) == "h:8001"
    assert same_server_over("[::1]:8000", ServerProtocol.HTTP) == "http://[::1]:8000"
    assert same_server_over("http://h:8000", ServerProtocol.GRPC, port=8001) == "h:8001"


def test_a_spec_knows_its_protocol_and_a_session_refuses_both_at_once() -> None:
    from app.inference.core.session import TritonSession

    assert SessionSpec(urls=("http://h:8000",)).protocol is ServerProtocol.HTTP
    assert SessionSpec(urls=("h:8001",)).protocol is ServerProtocol.GRPC
    assert SessionSpec().protocol is ServerProtocol.GRPC  # the embedded server
    with pytest.raises(ValueError, match="one protocol"):
        TritonSession(SessionSpec(urls=("h:8001", "http://h:8000")))


def test_binary_tensors_only_where_the_server_declares_them() -> None:
    triton = ServerFeatures.from_metadata(
        {"name": "triton", "version": "2.51.0", "extensions": ["binary_tensor_data", "statistics"]}
    )
    assert triton.binary_tensors and triton.describe() == "triton 2.51.0"
    mlserver = ServerFeatures.from_metadata({"name": "mlserver", "version": "1.7.1", "extensions": []})
    assert not mlserver.binary_tensors
    assert not ServerFeatures.from_metadata({"name": "mlserver"}).binary_tensors  # gRPC: no field


def test_a_missing_extension_is_said_once() -> None:
    features = ServerFeatures()
    assert features.mark_missing(Extension.STATISTICS)
    assert not features.mark_missing(Extension.STATISTICS)
    assert features.mark_missing(Extension.CONFIG)
    assert features.lacks(Extension.STATISTICS) and not features.lacks(Extension.SHARED_MEMORY)
    assert features.notes() == [MISSING[Extension.STATISTICS], MISSING[Extension.CONFIG]]
    assert MISSING[Extension.STATISTICS] == "server statistics not available from this server"


def test_mlservers_state_wording_is_triton_s() -> None:
    assert normal_state("State.READY") == "READY"
    assert normal_state("READY") == "READY"
    assert normal_state("UNAVAILABLE") == "UNAVAILABLE"
    assert normal_state(None) == ""


def test_http_headers_are_text_and_binary_values_travel_as_base64() -> None:
    headers = http_headers({"authorization": "Bearer x", "x-trace-bin": b"\x00\x01\xfe\xff"})
    assert headers["authorization"] == "Bearer x"
    assert headers["x-trace-bin"] == "AAH+/w=="
    assert headers["Accept-Encoding"] == "identity"
