"""The protocol chosen by a URL's scheme, and what a server has of Triton's extensions."""

from __future__ import annotations

import json
import re

import pytest

from app.inference.core.spec import SessionSpec
from app.inference.core.transport_choice import is_loopback
from app.inference.errors import unreachable_message
from app.inference.introspection.extensions import MISSING, Extension, ServerFeatures
from app.inference.introspection.server_metrics import default_metrics_url
from app.inference.protocol import (
    Endpoint,
    MixedProtocolsError,
    ServerProtocol,
    UrlError,
    parse_endpoints,
    parse_url,
    protocol_of,
    same_server_over,
)
from app.inference.transports.channel import ConnectionOptions
from app.inference.transports.http_channel import http_headers
from app.inference.transports.port_probe import what_listens
from app.model_states import ModelEntry, ModelState


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
    assert same_server_over(parse_url("127.0.0.1:8000"), ServerProtocol.HTTP) == "http://127.0.0.1:8000"
    assert same_server_over(parse_url("http://h:8001"), ServerProtocol.GRPC) == "h:8001"
    assert same_server_over(parse_url("[::1]:8000"), ServerProtocol.HTTP) == "http://[::1]:8000"
    assert same_server_over(parse_url("http://h:8000"), ServerProtocol.GRPC, port=8001) == "h:8001"


def test_a_spec_knows_its_protocol_and_a_session_refuses_both_at_once() -> None:
    from app.inference.core.session import TritonSession

    assert SessionSpec(endpoints=parse_endpoints("http://h:8000")).protocol is ServerProtocol.HTTP
    assert SessionSpec(endpoints=parse_endpoints("h:8001")).protocol is ServerProtocol.GRPC
    assert SessionSpec().protocol is ServerProtocol.GRPC  # the embedded server
    mixed = (parse_url("h:8001"), parse_url("http://h:8000"))
    with pytest.raises(MixedProtocolsError, match="one protocol"):
        parse_endpoints([e.url for e in mixed])  # where the user gives them
    with pytest.raises(ValueError, match="one protocol"):
        TritonSession(SessionSpec(endpoints=mixed))  # and a spec built otherwise


def test_a_grpc_target_naming_several_servers_is_one_endpoint_without_one_host() -> None:
    """gRPC's own load balancing takes targets such as `ipv4:H:P,H:P` or `dns:///NAME:PORT`:
    one endpoint, given to gRPC whole; nothing guesses a host or a port from it."""
    target = Endpoint(
        "ipv4:10.0.0.1:8001,10.0.0.2:8001", ServerProtocol.GRPC, "ipv4:10.0.0.1:8001,10.0.0.2:8001"
    )
    names = Endpoint("dns:///triton.example:8001", ServerProtocol.GRPC, "dns:///triton.example:8001")
    for endpoint in (target, names):
        assert (endpoint.host, endpoint.port) == (None, "")
        assert same_server_over(endpoint, ServerProtocol.HTTP) is None
        assert not is_loopback(endpoint)  # shared memory needs one server known to be here
        assert default_metrics_url(endpoint) is None
        assert what_listens(endpoint) is None  # no one port to look at
    assert "HOST:PORT" in unreachable_message(target, "Socket closed")


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
    assert ModelState.of("State.READY") is ModelState.READY
    assert ModelState.of("READY") is ModelState.READY
    assert ModelState.of("unavailable") is ModelState.UNAVAILABLE
    assert ModelState.of(None) is ModelState.NOT_LOADED
    assert ModelState.of("State.SOMETHING_ELSE") == "SOMETHING_ELSE"  # a server's own wording, kept


def test_one_model_record_prints_and_records_the_states_as_triton_words_them() -> None:
    never_loaded = ModelEntry("m", "", ModelState.of(""))
    assert never_loaded.state_text == "NOT LOADED" and not never_loaded.ready
    ready = ModelEntry("m", "1", ModelState.of("State.READY"))
    assert ready.ready and ready.state_text == "READY" and f"{ready.state:<7}|" == "READY  |"
    assert json.dumps(ready.to_record()) == '{"name": "m", "version": "1", "state": "READY", "reason": ""}'
    assert ModelEntry("m", "", ModelState.NOT_READY).state_text == "NOT READY"
    assert ModelEntry("m", "", "PAUSED").state_text == "PAUSED" and not ModelEntry("m", "", "PAUSED").ready


def test_http_headers_are_text_and_binary_values_travel_as_base64() -> None:
    headers = http_headers({"authorization": "Bearer x", "x-trace-bin": b"\x00\x01\xfe\xff"})
    assert headers["authorization"] == "Bearer x"
    assert headers["x-trace-bin"] == "AAH+/w=="
    assert headers["Accept-Encoding"] == "identity"


def test_the_command_line_parses_its_urls_once_and_names_the_option_in_its_errors() -> None:
    import argparse

    from app.commands.common import UsageError, endpoints_of

    args = argparse.Namespace(url=["h:8001", "h2:8001"], url_b=["http://b:8000"])
    assert endpoints_of(args) == parse_endpoints(["h:8001", "h2:8001"])
    assert endpoints_of(args, "url_b")[0].protocol is ServerProtocol.HTTP
    assert endpoints_of(argparse.Namespace(url=[])) == ()
    with pytest.raises(UsageError, match=r"^--url ftp://h: unknown scheme"):
        endpoints_of(argparse.Namespace(url=["ftp://h"]))
    with pytest.raises(
        UsageError, match=r"^--url: give servers of one protocol \(all gRPC or all HTTP\), not both$"
    ):
        endpoints_of(argparse.Namespace(url=["h:8001", "http://h:8000"]))
    with pytest.raises(UsageError, match=r"^--url-b grpc://b/x: a gRPC address is HOST:PORT"):
        endpoints_of(argparse.Namespace(url_b=["grpc://b/x"]), "url_b")


def test_fleet_targets_parse_as_one_balanced_endpoint_and_bad_ones_are_named() -> None:
    from app.inference.core.fleet import fleet_members
    from app.inference.protocol import fleet_addresses

    for url in ("ipv4:127.0.0.1:1,127.0.0.2:2", "grpc://ipv4:127.0.0.1:1,127.0.0.2:2"):
        fleet = parse_url(url)
        assert fleet.balanced and fleet.protocol is ServerProtocol.GRPC
        assert fleet.address == "ipv4:127.0.0.1:1,127.0.0.2:2"
        assert fleet_addresses(fleet) == ("127.0.0.1:1", "127.0.0.2:2")
        assert [m.address for m in fleet_members(fleet)] == ["127.0.0.1:1", "127.0.0.2:2"]
    names = parse_url("dns:///localhost:8001")  # a name (a Kubernetes headless service)
    assert names.balanced and names.address == "dns:///localhost:8001" and fleet_addresses(names) == ()
    assert "127.0.0.1:8001" in {m.address for m in fleet_members(names)}  # resolved here
    assert parse_url("dns://10.0.0.53/triton.example:8001").balanced  # a DNS server of its own
    assert not parse_url("127.0.0.1:8001").balanced and not parse_url("http://h:8000").balanced
    assert fleet_members(parse_url("127.0.0.1:8001")) == (parse_url("127.0.0.1:8001"),)
    for bad, why in (
        ("ipv4:127.0.0.1:1,127.0.0.2", "'127.0.0.2' is not HOST:PORT"),
        ("ipv4:", "'' is not HOST:PORT"),
        ("dns:///", "no host name"),
        ("h1:8001,h2:8001", "write ipv4:H:P,H:P"),
    ):
        with pytest.raises(UrlError, match=re.escape(why)):
            parse_url(bad)


def test_a_balanced_target_asks_grpc_for_round_robin() -> None:
    options = ConnectionOptions()
    assert ("grpc.lb_policy_name", "round_robin") in options.channel_args(balanced=True)
    assert not any(key == "grpc.lb_policy_name" for key, _ in options.channel_args())
