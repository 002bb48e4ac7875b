"""Numbers at the edges of what the command line takes: a timeout beyond a day is cut to a
day (gRPC turns a deadline beyond its range into an immediate "deadline exceeded"), and a
port outside 1..65535 is refused rather than wrapped around."""

from __future__ import annotations

import json

import skimage.data

from app.inference.core.session import TritonSession
from app.inference.core.spec import SessionSpec, Timeouts
from app.inference.protocol import parse_endpoints
from app.resources import sample_image
from app.server.embedded import EmbeddedServer
from tests.integration.test_cli_infer import run_cli


def test_a_huge_timeout_is_cut_to_a_day_and_the_user_told(triton: EmbeddedServer) -> None:
    done = run_cli("infer", "--url", triton.grpc_url, "--timeout", "1e10", str(sample_image()))
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert records[0]["status"] == "ok", records[0]
    assert done.returncode == 0, done.stderr[-2000:]
    assert "note: --timeout 1e10: 86400 s (a day) is used, the longest timeout" in done.stderr


def test_a_session_with_a_huge_timeout_still_answers(triton: EmbeddedServer) -> None:
    with TritonSession(
        SessionSpec(
            endpoints=parse_endpoints(triton.grpc_url),
            model="face_detector",
            timeouts=Timeouts(request_s=1e12),
        )
    ) as session:
        assert session.spec.timeouts.request_s == 86_400.0
        result = session.infer(skimage.data.astronaut(), timeout_s=1e15)
    assert result.ok, result.error


def test_serve_refuses_a_port_out_of_range() -> None:
    for option in ("--grpc-port", "--http-port", "--metrics-port"):
        done = run_cli("serve", option, "70000", timeout=60)
        assert done.returncode == 2
        assert f"argument {option}: 70000 is out of range (1 to 65535)" in done.stderr, done.stderr
