"""`--smoke-test` from the source tree (the frozen build runs the same code: test_frozen.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from app.server.embedded import EmbeddedServer
from app.server.ports import free_ports
from tests.packaging.helpers import assert_astronaut_face, run, smoke_record

pytestmark = pytest.mark.slow


def test_smoke_test_passes_against_a_real_server(triton: EmbeddedServer) -> None:
    done = run([sys.executable, "-m", "app", "--smoke-test", "--url", triton.grpc_url])
    assert done.returncode == 0, done.stderr
    assert_astronaut_face(smoke_record(done.stdout))
    # Every step is named as it runs, the TLS roots among them.
    assert "gRPC TLS roots (roots.pem)" in done.stderr
    assert "face_detector" in done.stderr


def test_smoke_test_names_a_dead_url() -> None:
    (port,) = free_ports(1)
    done = run([sys.executable, "-m", "app", "--smoke-test", "--url", f"127.0.0.1:{port}"])
    assert done.returncode != 0
    assert "smoke test passed" not in done.stdout
    assert f"smoke test FAILED at connect to 127.0.0.1:{port}" in done.stderr
    assert "nothing is listening" in done.stderr


def test_smoke_test_names_a_bad_image(triton: EmbeddedServer, tmp_path: Path) -> None:
    bad = tmp_path / "notes.jpg"
    bad.write_text("not a picture")
    done = run([sys.executable, "-m", "app", "--smoke-test", "--url", triton.grpc_url, "--image", str(bad)])
    assert done.returncode == 1
    assert "smoke test FAILED at read the sample image" in done.stderr
    assert "notes.jpg: not an image" in done.stderr
