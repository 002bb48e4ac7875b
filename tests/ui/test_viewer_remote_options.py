"""The viewer's TLS and header options reach the server connection (session and probe)."""

from __future__ import annotations

import pytest

from app.inference.transports.channel import ConnectionOptions
from app.server.embedded import EmbeddedServer
from tests.ui.viewer_fixtures import Harness, until

pytestmark = [pytest.mark.gui]


def test_headers_are_used_and_never_shown(harness: Harness, triton: EmbeddedServer) -> None:
    secret = "Bearer v1ewer-s3cret"
    viewer = harness.viewer(triton.grpc_url, connection=ConnectionOptions(headers={"authorization": secret}))
    harness.connected(viewer)
    assert viewer.connection.session is not None
    assert viewer.connection.session.spec.connection.headers == {"authorization": secret}
    assert secret not in viewer.window.server_panel.state_text()


def test_tls_against_a_plain_server_shows_the_mismatch(harness: Harness, triton: EmbeddedServer) -> None:
    viewer = harness.viewer(triton.grpc_url, connection=ConnectionOptions(ssl=True))
    harness.run(until(lambda: viewer.connection.state == "failed", what="the failure"))
    assert "TLS mismatch" in viewer.window.banner.text()


def test_bad_header_option_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    from app.cli import main

    assert main(["--header", "no-equals-sign"]) == 2
    assert "--header expects KEY=VALUE" in capsys.readouterr().err
