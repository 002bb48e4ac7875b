"""The embedded server's lifecycle: loopback only, clean stop, clear errors, side by side."""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import skimage.data

from app.resources import model_repository
from app.server.embedded import SHM_DIR, WORKDIR_PREFIX, CrashedWhileStarting, EmbeddedServer
from app.server.errors import ModelLoadError, TritonNotFoundError
from app.server.health import repository_index
from app.server.install import find_tritonserver
from app.system.leftovers import owner_tag
from tests.conftest import TEST_MODELS
from tests.integration.face_check import detect_faces
from tests.integration.procs import eventually, group_members, listening_addresses, owned_by

ROOT = Path(__file__).resolve().parents[2]


def test_listens_on_loopback_only(triton: EmbeddedServer) -> None:
    assert triton.pid is not None
    addresses = listening_addresses(triton.pid)
    ports = {port for _, port in addresses}
    assert {triton.grpc_port, triton.http_port, triton.metrics_port} <= ports
    assert all(host == "127.0.0.1" for host, _ in addresses), addresses


def test_reports_models_that_did_not_load_but_serves_the_rest(triton: EmbeddedServer) -> None:
    states = {m.name: m for m in repository_index(triton.http_url)}
    assert states["face_detector"].state == "READY"
    assert states["broken_at_load"].state == "UNAVAILABLE"
    assert "refuses to load" in states["broken_at_load"].reason


@pytest.mark.slow
def test_stop_leaves_no_process_and_no_shared_memory(tmp_path: Path) -> None:
    server = EmbeddedServer(model_repository()).start()
    pgid = os.getpgid(server.pid or 0)
    members = group_members(pgid)
    assert len(members) >= 3, "server plus one stub per face_detector instance"
    regions = list(SHM_DIR.glob(f"{server.shm_prefix}*"))
    assert regions, "the Python backend's regions carry this server's prefix"
    workdir = server.workdir
    assert workdir is not None and workdir.is_dir()
    server.stop()
    server.stop()  # idempotent
    assert group_members(pgid) == [], "no tritonserver, stub or lifeline watcher left"
    assert list(SHM_DIR.glob(f"{server.shm_prefix}*")) == []
    assert not workdir.exists()


@pytest.mark.slow
def test_stop_after_the_server_died_alone_ends_the_rest_of_its_group() -> None:
    server = EmbeddedServer(model_repository()).start()
    pgid = server.pid or 0
    os.kill(pgid, signal.SIGKILL)  # tritonserver alone, as a crash would end it
    assert eventually(lambda: not server.running)  # reaped: its pid no longer names the group
    assert group_members(pgid), "the watcher (and the stubs for a while) outlive it"
    server.stop()
    assert group_members(pgid) == []
    assert list(SHM_DIR.glob(f"{server.shm_prefix}*")) == []


@pytest.mark.slow
def test_a_broken_model_gives_an_error_naming_it(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "broken_at_load").symlink_to(TEST_MODELS / "broken_at_load", target_is_directory=True)
    with pytest.raises(ModelLoadError) as caught:
        EmbeddedServer(repo).start()
    message = str(caught.value)
    assert "broken_at_load" in message
    assert "refuses to load (weights file missing)" in message  # the server's own words
    assert caught.value.failed.keys() == {"broken_at_load"}


def crashing_repository(root: Path, marker: str) -> Path:
    """A repository whose one model aborts the server while it starts (see its model.py)."""
    model = root / "crashes_server"
    shutil.copytree(TEST_MODELS.parent / "models_crashing" / "crashes_server", model)
    (model / marker).touch()
    return root


@pytest.mark.slow
def test_a_server_that_crashes_while_starting_is_started_once_more(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    repo = crashing_repository(tmp_path / "repo", "crash_once")
    with caplog.at_level(logging.WARNING), EmbeddedServer(repo) as server:
        assert server.running
        assert [m.name for m in server.models if m.ready] == ["crashes_server"]
    assert not (repo / "crashes_server" / "crash_once").exists(), "the first start ran the model"
    (warning,) = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert "tritonserver crashed (SIGABRT) while starting" in warning and "starting it again" in warning


@pytest.mark.slow
def test_a_server_that_crashes_at_each_start_says_so_with_its_log(tmp_path: Path) -> None:
    repo = crashing_repository(tmp_path / "repo", "crash_always")
    mine = f"{WORKDIR_PREFIX}{owner_tag()}-*"  # this process's work folders
    leftovers = set(Path(tempfile.gettempdir()).glob(mine))
    with pytest.raises(CrashedWhileStarting) as caught:
        EmbeddedServer(repo).start()
    message = str(caught.value)
    assert message.startswith("tritonserver crashed (SIGABRT) while starting; its log ends:")
    assert "crashes_server" in message  # the server's own lines about the model it was loading
    assert set(Path(tempfile.gettempdir()).glob(mine)) <= leftovers, "both attempts cleaned up"


@pytest.mark.slow
def test_two_servers_side_by_side(triton: EmbeddedServer) -> None:
    with EmbeddedServer(model_repository()) as second:
        assert second.grpc_port != triton.grpc_port
        photo = skimage.data.astronaut()
        first_boxes, _ = detect_faces(triton.grpc_url, photo)
        second_boxes, _ = detect_faces(second.grpc_url, photo)
        assert len(first_boxes) == len(second_boxes) == 1
        assert abs(first_boxes - second_boxes).max() < 1e-3


def test_an_explicit_binary_that_is_not_there_says_how_to_get_one(tmp_path: Path) -> None:
    with pytest.raises(TritonNotFoundError) as caught:
        find_tritonserver(tmp_path / "tritonserver")
    assert "nvidia-pytriton" in str(caught.value)
    assert "--url" in str(caught.value)


def metrics_page(address: str, wait_s: float = 10.0) -> str:
    """The metrics page at `address`; Triton opens its metrics port a moment after the others
    (seen refused once on a loaded machine right after `serve` printed the addresses)."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            with urllib.request.urlopen(f"http://{address}/metrics", timeout=10) as page:
                return str(page.read().decode())
        except ConnectionRefusedError:
            pass
        except urllib.error.URLError as e:
            if not isinstance(e.reason, ConnectionRefusedError):
                raise
        assert time.monotonic() < deadline, f"nothing answers at {address}"
        time.sleep(0.1)


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_serve_command_prints_the_addresses_and_stops_on_a_signal(sig: signal.Signals) -> None:
    with subprocess.Popen(
        [sys.executable, "-m", "app", "serve"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    ) as proc:
        try:
            line = proc.stdout.readline() if proc.stdout else ""
            assert line.startswith("grpc=127.0.0.1:") and " http=127.0.0.1:" in line, line
            # The metrics address it picked, beside the others: its page answers there.
            addresses = dict(part.split("=", 1) for part in line.split())
            assert list(addresses) == ["grpc", "http", "metrics"], line
            assert addresses["metrics"].startswith("127.0.0.1:")
            assert "nv_inference_count" in metrics_page(addresses["metrics"])
            owned = owned_by(proc.pid)
            assert owned.live_members() and owned.regions() and owned.workdirs()
            grpc_url = line.split()[0].removeprefix("grpc=")
            boxes, _ = detect_faces(grpc_url, skimage.data.astronaut())
            assert len(boxes) == 1
            started = time.monotonic()
            proc.send_signal(sig)
            assert proc.wait(timeout=10) == 0
            assert time.monotonic() - started < 10
            assert group_members(proc.pid) == []
            # Its own clean-up: no tritonserver or stub, region or work folder left, no sweep needed.
            assert owned.live_members() == []
            assert owned.regions() == []
            assert owned.workdirs() == []
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
