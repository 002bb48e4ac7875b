"""The PyInstaller build really works: built by packaging/build.sh (as `make package`,
without the archive), then run against the test suite's real server.

Reuses dist/triton-viewer/ when it is newer than every source file it is made of
(a clean clone, as in CI, always builds: about a minute on 2 cores).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import cv2
import pytest

from app.resources import sample_image
from app.server.embedded import EmbeddedServer
from tests.integration.procs import ended_at_exit, eventually, owned_by, start_that_only_sweeps
from tests.packaging.helpers import ROOT, assert_astronaut_face, run, smoke_record

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

DIST = ROOT / "dist"
FOLDER = DIST / "triton-viewer"
EXECUTABLE = FOLDER / "triton-viewer"
SOURCES = [ROOT / "app", ROOT / "resources", ROOT / "packaging", ROOT / "pyproject.toml"]


def _newest_source_mtime() -> float:
    newest = 0.0
    for root in SOURCES:
        files = [root] if root.is_file() else root.rglob("*")
        for f in files:
            # The server writes __pycache__ into the model repository: not a source change.
            if f.is_file() and "__pycache__" not in f.parts and f.suffix != ".pyc":
                newest = max(newest, f.stat().st_mtime)
    return newest


def _fresh() -> bool:
    return EXECUTABLE.is_file() and EXECUTABLE.stat().st_mtime > _newest_source_mtime()


@pytest.fixture(scope="module")
def frozen_app() -> Iterator[Path]:
    DIST.mkdir(exist_ok=True)
    # Several test runs may share this tree: one builds, the others wait and reuse.
    with open(DIST / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _fresh():
            done = run(
                ["bash", "packaging/build.sh"],
                timeout=800,
                env={"PYTHON": sys.executable, "TRITON_VIEWER_NO_ARCHIVE": "1"},
            )
            assert done.returncode == 0, f"build failed:\n{done.stdout}\n{done.stderr[-4000:]}"
            print(done.stdout)  # size and build time, shown with -s
        assert EXECUTABLE.is_file()
        yield EXECUTABLE


def test_bundle_holds_tls_roots_qt_platforms_and_resources(frozen_app: Path) -> None:
    internal = FOLDER / "_internal"
    assert "BEGIN CERTIFICATE" in (internal / "grpc/_cython/_credentials/roots.pem").read_text()
    plugins = internal / "PySide6/Qt/plugins/platforms"
    assert (plugins / "libqoffscreen.so").is_file() and (plugins / "libqxcb.so").is_file()
    assert (internal / "resources/model_repository/face_detector/config.pbtxt").is_file()
    assert (internal / "resources/samples/astronaut.jpg").is_file()
    assert (internal / "pytriton/tritonserver/bin/tritonserver").stat().st_mode & 0o111
    for other_binding in ("PyQt5", "PyQt6", "PySide2", "tkinter", "matplotlib", "scipy", "skimage"):
        assert not (internal / other_binding).exists(), other_binding


def test_frozen_smoke_test_against_the_test_server(frozen_app: Path, triton: EmbeddedServer) -> None:
    done = run([str(frozen_app), "--smoke-test", "--url", triton.grpc_url])
    assert done.returncode == 0, done.stderr
    assert_astronaut_face(smoke_record(done.stdout))


def test_frozen_smoke_test_with_its_embedded_server(frozen_app: Path) -> None:
    # The frozen app borrows a Python installation with numpy<2 + OpenCV for the model stub:
    # here the venv's.
    done = run([str(frozen_app), "--smoke-test"], env={"TRITON_VIEWER_PYTHON": sys.executable})
    assert done.returncode == 0, done.stderr
    assert "smoke: embedded server at 127.0.0.1:" in done.stderr
    assert_astronaut_face(smoke_record(done.stdout))


def test_frozen_app_says_the_embedded_server_needs_python(frozen_app: Path) -> None:
    done = run([str(frozen_app), "--smoke-test"], env={"TRITON_VIEWER_PYTHON": "/nonexistent/python3"})
    assert done.returncode == 1
    assert "smoke test FAILED at embedded server: not available" in done.stderr
    assert "needs a Python" in done.stderr and "numpy<2" in done.stderr
    assert "/nonexistent/python3: cannot run it" in done.stderr
    assert "--url HOST:PORT" in done.stderr


def test_frozen_viewer_screenshot_under_xvfb(
    frozen_app: Path, triton: EmbeddedServer, tmp_path: Path
) -> None:
    xvfb_run = shutil.which("xvfb-run")
    assert xvfb_run, "xvfb-run missing: packaging/system-deps.sh installs it (make test)"
    shot = tmp_path / "viewer.png"
    done = run(
        [
            xvfb_run,
            "-a",
            str(frozen_app),
            "--url",
            triton.grpc_url,
            "--open",
            str(sample_image()),
            "--screenshot",
            str(shot),
        ],
        timeout=240,
        env={"QT_QPA_PLATFORM": "xcb"},
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    window = cv2.imread(str(shot))
    assert window is not None and window.shape[0] > 200 and window.shape[1] > 200
    assert float(window.std()) > 10  # a drawn window, not a blank frame


def test_frozen_serve_killed_leaves_no_server(frozen_app: Path, tmp_path: Path) -> None:
    """The lifeline works in the frozen app too (its own /bin/sh watcher, the bundled server)."""
    env = dict(os.environ, TRITON_VIEWER_PYTHON=sys.executable)
    with (
        open(tmp_path / "serve.err", "w") as err,
        subprocess.Popen(
            [str(frozen_app), "serve"], stdout=subprocess.PIPE, stderr=err, text=True, env=env
        ) as proc,
        ended_at_exit(proc) as groups,
    ):
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("grpc="), (tmp_path / "serve.err").read_text()[-3000:]
        owned = owned_by(proc.pid)  # a folder build runs the app in this very process
        groups.extend(owned.groups)
        assert len(owned.live_members()) >= 4 and owned.regions() and owned.workdirs()
        proc.kill()
        proc.wait()
        assert eventually(lambda: owned.live_members() == []), owned.live_members()
        start_that_only_sweeps(tmp_path)
        assert owned.regions() == [] and owned.workdirs() == []
