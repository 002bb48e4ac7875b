"""Wrong-port hints measured against real servers, and gRPC metadata from the command line,
a header file and the environment (binary `-bin` keys included)."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
from pathlib import Path

import pytest
import skimage.data

from app.inference.core.session import TritonSession
from app.inference.core.spec import SessionSpec, Timeouts
from app.inference.errors import SessionError
from app.inference.protocol import parse_endpoints, parse_url
from app.inference.result import ErrorKind
from app.inference.transports.channel import ConnectionOptions
from app.inference.transports.port_probe import what_listens
from app.server.embedded import EmbeddedServer
from tests.grpc_servers import recording_server, tls_server

ROOT = Path(__file__).resolve().parents[2]


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


def test_a_plain_client_on_a_tls_port_is_told_to_add_ssl(tmp_path: Path) -> None:
    with tls_server(tmp_path) as (url, _cert):
        assert what_listens(parse_url(url)) == "tls"
        with pytest.raises(SessionError) as caught:
            TritonSession(SessionSpec(endpoints=parse_endpoints(url), timeouts=Timeouts(request_s=3))).open()
    message = str(caught.value)
    assert caught.value.kind is ErrorKind.TLS
    assert "speaks TLS" in message and "--ssl" in message
    assert "HTTP port" not in message


def test_a_certificate_for_another_host_name_is_reported_as_such(tmp_path: Path) -> None:
    with tls_server(tmp_path, host="inference.example") as (url, cert):
        options = ConnectionOptions(ssl=True, root_certificates=str(cert))
        with pytest.raises(SessionError) as caught:
            TritonSession(
                SessionSpec(
                    endpoints=parse_endpoints(url), connection=options, timeouts=Timeouts(request_s=3)
                )
            ).open()
    message = str(caught.value)
    assert caught.value.kind is ErrorKind.TLS
    assert f"the certificate of the server at {url} is not issued for '127.0.0.1'" in message
    assert "nothing is listening" not in message


def test_a_certificate_nobody_vouches_for_asks_for_its_authority(tmp_path: Path) -> None:
    with tls_server(tmp_path) as (url, _cert), pytest.raises(SessionError) as caught:
        TritonSession(
            SessionSpec(
                endpoints=parse_endpoints(url),
                connection=ConnectionOptions(ssl=True),
                timeouts=Timeouts(request_s=3),
            )
        ).open()
    assert caught.value.kind is ErrorKind.TLS
    assert "is not trusted: give the certificate authority that signed it with --root-certificates" in str(
        caught.value
    )


def test_a_plain_client_on_the_http_port_is_told_it_is_the_http_port(triton: EmbeddedServer) -> None:
    assert what_listens(parse_url(triton.http_url)) == "http"
    with pytest.raises(SessionError) as caught:
        TritonSession(
            SessionSpec(endpoints=parse_endpoints(triton.http_url), timeouts=Timeouts(request_s=3))
        ).open()
    message = str(caught.value)
    assert "that is Triton's HTTP port: connect over HTTP?" in message and "8001" in message
    assert caught.value.offer == f"http://{triton.http_url}"
    assert "--ssl" not in message


def test_nothing_listening_is_neither_tls_nor_http(tmp_path: Path) -> None:
    from app.server.ports import free_ports

    (port,) = free_ports(1)
    url = f"127.0.0.1:{port}"
    assert what_listens(parse_url(url), timeout_s=0.5) is None
    with pytest.raises(SessionError, match="nothing is listening"):
        TritonSession(SessionSpec(endpoints=parse_endpoints(url), timeouts=Timeouts(request_s=2))).open()


def test_a_binary_header_is_sent_as_bytes(triton: EmbeddedServer) -> None:
    options = ConnectionOptions(headers={"x-trace-bin": b"\x00\x01\xfe\xff", "authorization": "Bearer abc"})
    with TritonSession(
        SessionSpec(endpoints=parse_endpoints(triton.grpc_url), connection=options)
    ) as session:
        result = session.infer(skimage.data.astronaut())
    assert result.ok, result.error


def test_headers_come_from_the_environment_a_file_and_the_command_line(tmp_path: Path) -> None:
    header_file = tmp_path / "headers.txt"
    header_file.write_text(
        "# tokens for the cluster\n\nauthorization=Bearer from-file\nx-team=vision\n"
        f"x-trace-bin={base64.b64encode(bytes([0, 1, 254, 255])).decode()}\n"
    )
    env = {"TRITON_VIEWER_HEADERS": "x-env=from-env\nx-team=overridden-by-file"}
    with recording_server() as server:
        done = run_cli(
            "models", "--url", server.url, "--header-file", str(header_file), "--header", "x-cli=1", env=env
        )
        sent = server.metadata()
    assert done.returncode == 2  # not a Triton server; the call itself carried the metadata
    assert sent, done.stderr
    first = sent[0]
    assert first["authorization"] == "Bearer from-file"
    assert first["x-team"] == "vision"  # the file wins over the environment
    assert first["x-env"] == "from-env"
    assert first["x-cli"] == "1"
    assert first["x-trace-bin"] == bytes([0, 1, 254, 255])
    assert "from-file" not in done.stderr  # values never printed


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--header", "x-trace-bin=not base64!"], "'x-trace-bin' is binary metadata"),
        (["--header", "no-equals-sign"], "--header expects KEY=VALUE"),
        (["--header-file", "/nonexistent/h.txt"], "--header-file /nonexistent/h.txt: not found"),
    ],
)
def test_bad_headers_are_usage_errors_naming_the_key(args: list[str], expected: str) -> None:
    done = run_cli("models", "--url", "127.0.0.1:1", *args)
    assert done.returncode == 2
    assert expected in done.stderr
    assert "Traceback" not in done.stderr


def test_a_bad_header_file_line_is_named(tmp_path: Path) -> None:
    header_file = tmp_path / "h.txt"
    header_file.write_text("authorization=Bearer x\njust-a-token-without-key\n")
    done = run_cli("models", "--url", "127.0.0.1:1", "--header-file", str(header_file))
    assert done.returncode == 2
    assert f"--header-file {header_file} line 2 expects KEY=VALUE" in done.stderr
    assert "Bearer" not in done.stderr
