"""`python -m app models`: a real process listing the real test server's models."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from app.server.embedded import EmbeddedServer
from app.server.ports import free_ports
from tests.cli_runner import run_cli_in_process

ROOT = Path(__file__).resolve().parents[2]


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli_in_process(*args)


def section(text: str, model: str) -> str:
    """The lines about one model: from its header to the next blank line."""
    match = re.search(rf"^{re.escape(model)} \(version \d+\): .*?(?=^\s*$)", text, re.M | re.S)
    assert match, text
    return match.group(0)


def test_lists_models_with_state_tensors_batching_and_profile(triton: EmbeddedServer) -> None:
    done = run_cli("models", "--url", triton.grpc_url)
    assert done.returncode == 0, done.stderr
    face = section(done.stdout, "face_detector")
    assert face.splitlines()[0].endswith(": READY")
    assert re.search(r"image\s+UINT8\s+\[-1, -1, -1, 3\]", face)
    assert re.search(r"det_boxes\s+FP32\s+\[-1, 100, 4\]", face)
    assert "max_batch_size: 8" in face
    assert "dynamic batching: on (max queue delay 2000 us" in face
    assert "instance groups: 2 x CPU" in face
    assert "efficientnms" in face and "labels: face" in face

    yolo = section(done.stdout, "fixed_yolov8")
    assert "dynamic batching: off" in yolo and "yolov8 (output0)" in yolo and "640x640" in yolo

    broken = section(done.stdout, "broken_at_load")
    assert broken.splitlines()[0].endswith(": UNAVAILABLE")
    assert "reason:" in broken and "weights file missing" in broken


def test_profile_overrides_show_in_the_listing(triton: EmbeddedServer, tmp_path: Path) -> None:
    labels = tmp_path / "names.txt"
    labels.write_text("person\n")
    done = run_cli("models", "--url", triton.grpc_url, "--model", "face_detector", "--labels", str(labels))
    assert done.returncode == 0, done.stderr
    assert "labels: person" in done.stdout and "broken_at_load" not in done.stdout


def test_unknown_model_lists_the_others(triton: EmbeddedServer) -> None:
    done = run_cli("models", "--url", triton.grpc_url, "--model", "nope")
    assert done.returncode == 2
    assert "'nope' not found" in done.stderr and "face_detector" in done.stderr


def test_nothing_listening_is_exit_2_with_a_hint() -> None:
    (port,) = free_ports(1)
    done = run_cli("models", "--url", f"127.0.0.1:{port}")
    assert done.returncode == 2
    assert "nothing is listening" in done.stderr and done.stdout == ""


def test_the_http_port_gets_the_grpc_hint(triton: EmbeddedServer) -> None:
    done = run_cli("models", "--url", triton.http_url)
    assert done.returncode == 2
    assert "HTTP port" in done.stderr
