"""No secret leaks: a server that echoes the request's headers in its errors (not as sent:
lower-cased, decoded, embedded; tests/http_proxy.py in front of the real Triton) never gets
them onto stderr or into the JSONL records; a URL's password is masked; the embedded server and
its models' backend processes never see TRITON_VIEWER_HEADERS (their /proc/PID/environ)."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import cv2
import numpy as np
import pytest

from app.commands.headers import HEADERS_ENV
from app.server.embedded import EmbeddedServer
from app.server.process_group import live_members
from tests.cli_runner import run_cli_in_process
from tests.http_proxy import http_proxy

pytestmark = pytest.mark.slow
TEST_MODELS = Path(__file__).resolve().parents[1] / "models"
MODEL = "fixed_cost"
TOKEN = "T0kenEchoedBack"
BINARY = b"binary-Secret-42"


def test_headers_a_server_echoes_in_its_errors_are_masked_on_stderr_and_in_records(
    triton: EmbeddedServer, tmp_path: Path
) -> None:
    image = tmp_path / "a.png"
    cv2.imwrite(str(image), np.full((32, 32, 3), 90, np.uint8))
    records = tmp_path / "o.jsonl"
    with http_proxy(triton.http_port) as proxy:
        proxy.rules.echo_headers = True
        run = run_cli_in_process(
            "infer",
            "--url",
            proxy.url,
            "--model",
            MODEL,
            "--header",
            f"authorization=Bearer {TOKEN}",
            "--header",
            f"x-token-bin={base64.b64encode(BINARY).decode()}",
            "--header",
            "x-api-key=KeyValue77",
            "--output",
            str(records),
            str(image),
        )
        sent = [headers for path, headers in proxy.rules.headers if path.endswith("/infer")]
    assert run.returncode == 1, run.stderr
    assert sent and sent[0]["authorization"] == f"Bearer {TOKEN}", "the headers went out"
    (record, _summary) = [json.loads(line) for line in records.read_text().splitlines()]
    assert record["status"] == "failed" and "unauthorized" in record["error"], record
    assert "***" in record["error"]
    shown = run.stderr + records.read_text()
    for secret in (TOKEN, BINARY.decode(), "KeyValue77", base64.b64encode(BINARY).decode()):
        assert secret.lower() not in shown.lower(), (secret, shown)


def test_a_urls_password_never_shows(tmp_path: Path) -> None:
    run = run_cli_in_process("models", "--url", "http://alice:UrlPa55word@127.0.0.1:9", "--timeout", "2")
    assert run.returncode == 2
    assert "UrlPa55word" not in run.stderr + run.stdout and "alice:***@127.0.0.1:9" in run.stderr, run.stderr


def test_the_embedded_server_and_its_backends_never_see_the_headers_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(HEADERS_ENV, "authorization=Bearer EnvS3cret")
    monkeypatch.setenv("MY_SERVICE_TOKEN", "EnvS3cret2")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / MODEL).symlink_to(TEST_MODELS / MODEL, target_is_directory=True)
    with EmbeddedServer(repo) as server:
        assert server.pid is not None
        members = live_members(server.pid)
        assert len(members) >= 2, "the server and its model's stub"
        environments = [Path(f"/proc/{pid}/environ").read_bytes() for pid in members]
    assert os.environ[HEADERS_ENV], "this process still has it"
    for environ in environments:
        assert b"PATH=" in environ, "a real environment was read"
        assert HEADERS_ENV.encode() not in environ and b"EnvS3cret" not in environ
