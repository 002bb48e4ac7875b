"""The viewer as a process: --screenshot, SIGTERM while requests are in flight, SIGHUP and
SIGKILL with its local server."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import tritonclient.grpc as grpcclient
from PySide6.QtGui import QImage

from app.resources import sample_image
from app.server.embedded import EmbeddedServer
from tests.integration.procs import ended_at_exit, eventually, owned_by, start_that_only_sweeps
from tests.ui.viewer_fixtures import image_folder, slow_image

pytestmark = [pytest.mark.gui, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
VIEWER = [sys.executable, "-m", "app"]


def viewer_env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(QT_QPA_PLATFORM="offscreen", TRITON_VIEWER_SETTINGS_DIR=str(tmp_path / "settings"))
    return env


def run_viewer(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The viewer as a user starts it, offscreen, with its own settings folder."""
    return subprocess.run(
        [*VIEWER, *args], cwd=ROOT, env=viewer_env(tmp_path), capture_output=True, text=True, timeout=120
    )


def test_screenshot_after_results(triton: EmbeddedServer, tmp_path: Path) -> None:
    out = tmp_path / "out.png"
    proc = run_viewer(
        tmp_path, "--url", triton.grpc_url, "--open", str(sample_image()), "--screenshot", str(out)
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    image = QImage(str(out))
    assert not image.isNull()
    assert image.width() >= 800 and image.height() >= 500
    assert out.stat().st_size > 20_000  # a real window with a photo, not a blank


def test_sigterm_with_requests_in_flight_exits_cleanly(triton: EmbeddedServer, tmp_path: Path) -> None:
    folder = image_folder(tmp_path / "slow", 64, slow_image(1000))
    stats = grpcclient.InferenceServerClient(triton.grpc_url)

    def successes() -> int:
        (model,) = stats.get_inference_statistics("slow_faces", as_json=True)["model_stats"]
        return int(model["inference_stats"]["success"].get("count", 0))

    before = successes()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "app",
            "--url",
            triton.grpc_url,
            "--model",
            "slow_faces",
            "--open",
            str(folder),
        ],
        cwd=ROOT,
        env=viewer_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # It is connected and feeding once the server has answered one of its slow requests
        # (each takes 1 s): the others are then in flight.
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and proc.poll() is None and successes() <= before:
            time.sleep(0.1)
        assert proc.poll() is None, proc.communicate()
        assert successes() > before
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=20)
        print(f"exit after SIGTERM: {time.monotonic() - started:.2f} s")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0
    assert err == "", err
    assert "QThread" not in out


@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGKILL], ids=lambda s: s.name)
def test_the_local_server_ends_with_the_viewer(sig: signal.Signals, tmp_path: Path) -> None:
    """SIGHUP (its terminal closed): the viewer closes and stops its server itself. SIGKILL:
    the lifeline ends the server, and the next start removes its regions and work folder."""
    with (
        open(tmp_path / "viewer.log", "w") as log,
        subprocess.Popen(
            VIEWER, cwd=ROOT, env=viewer_env(tmp_path), stdout=log, stderr=log, start_new_session=True
        ) as proc,
        ended_at_exit(proc) as groups,
    ):
        # Started on an executor thread: serving once the stubs of face_detector run.
        assert eventually(
            lambda: len(owned_by(proc.pid).live_members()) >= 4 and bool(owned_by(proc.pid).regions()),
            deadline_s=180,
        ), (tmp_path / "viewer.log").read_text()
        owned = owned_by(proc.pid)
        groups.extend(owned.groups)
        proc.send_signal(sig)
        status = proc.wait(timeout=60)
        if sig == signal.SIGHUP:
            assert status == 0, (tmp_path / "viewer.log").read_text()
            assert owned.live_members() == []  # its own clean-up, no sweep needed
        else:
            assert status == -signal.SIGKILL
            assert eventually(lambda: owned.live_members() == []), owned.live_members()
            start_that_only_sweeps(tmp_path)
        assert owned.regions() == []
        assert owned.workdirs() == []


def test_settings_are_remembered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from app.ui.base.settings import SETTINGS_DIR_ENV, ViewerSettings, open_settings

    monkeypatch.setenv(SETTINGS_DIR_ENV, str(tmp_path / "s"))
    first = ViewerSettings(open_settings())
    first.remember_server("a:8001")
    first.remember_server("b:8001")
    first.set_thresholds("face_detector", 0.6, 0.4)
    first.set_model("face_detector")
    first.sync()
    again = ViewerSettings(open_settings())
    assert again.recent_servers() == ["b:8001", "a:8001"]
    assert again.thresholds("face_detector") == pytest.approx((0.6, 0.4))
    assert again.model() == "face_detector"
    assert (tmp_path / "s" / "triton-viewer.ini").is_file()
