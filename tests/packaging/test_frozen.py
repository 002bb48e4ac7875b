"""The packaged executable really works where users run it: built by packaging/build.sh (as
`make package`, archive included), unpacked into a fresh folder whose name has a space, and run
with an empty environment (`env -i HOME=... PATH=/nonexistent`: no Python, no numpy, no tools).

Reuses dist/ when the executable and the archive are newer than every source file they are
made of (a clean clone, as in CI, always builds: about a minute on 2 cores).
"""

from __future__ import annotations

import fcntl
import json
import platform
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import cv2
import pytest

import app
from app.server.embedded import EmbeddedServer
from tests.integration.procs import ended_at_exit, eventually, owned_by, start_that_only_sweeps
from tests.media import make_face_video
from tests.packaging.helpers import (
    ROOT,
    assert_astronaut_face,
    exec_argv,
    read_entry,
    run,
    run_clean,
    smoke_record,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

DIST = ROOT / "dist"
NAME = "triton-viewer"
EXECUTABLE = DIST / NAME / NAME
ARCHIVE = DIST / f"{NAME}-{app.__version__}-linux-{platform.machine()}.tar.gz"
SOURCES = [ROOT / "app", ROOT / "resources", ROOT / "packaging", ROOT / "pyproject.toml"]
VERSION = f"{sys.version_info.major}.{sys.version_info.minor}"
# bytes: the archive with the runtime included. 250 MB until onnxruntime came in for model files
# (issue 29: 30 MB unpacked, +14 MB in the archive, measured: 245.7 -> 259.9 MB).
ARCHIVE_BUDGET = 265 * 10**6
PNG = b"\x89PNG\r\n\x1a\n"


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
    if not (EXECUTABLE.is_file() and ARCHIVE.is_file()):
        return False
    newest = _newest_source_mtime()
    return EXECUTABLE.stat().st_mtime > newest and ARCHIVE.stat().st_mtime >= EXECUTABLE.stat().st_mtime


@pytest.fixture(scope="module")
def build_log() -> Iterator[str]:
    """Builds dist/ (folder and archive) unless fresh; the build's output, or "" when reused."""
    DIST.mkdir(exist_ok=True)
    # Several test runs may share this tree: one builds, the others wait and reuse.
    with open(DIST / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        output = ""
        if not _fresh():
            done = run(["bash", "packaging/build.sh"], timeout=800, env={"PYTHON": sys.executable})
            assert done.returncode == 0, f"build failed:\n{done.stdout}\n{done.stderr[-4000:]}"
            output = done.stdout
            print(output)  # the glibc report, sizes and build time, shown with -s
        assert ARCHIVE.is_file()
        yield output


@pytest.fixture(scope="module")
def unpacked(build_log: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The archive unpacked into a fresh folder: <tmp>/fresh folder0/triton-viewer."""
    folder = tmp_path_factory.mktemp("fresh folder")
    subprocess.run(["tar", "-xzf", str(ARCHIVE), "-C", str(folder)], check=True, timeout=300)
    assert (folder / NAME / NAME).is_file()
    return folder / NAME


def bare_env(home: Path, **extra: str) -> dict[str, str]:
    """A desktop session stripped to nothing: no Python, numpy or any tool on PATH."""
    home.mkdir(parents=True, exist_ok=True)
    return {"HOME": str(home), "PATH": "/nonexistent", **extra}


def sample_in(folder: Path) -> Path:
    return folder / "_internal" / "resources" / "samples" / "astronaut.jpg"


# -- the build ------------------------------------------------------------------------------------
def test_build_reports_a_glibc_floor_of_2_35(build_log: str, unpacked: Path) -> None:
    if build_log:  # built by this run (always on a clean clone): the build step printed it
        assert "bundle check: highest GLIBC version needed: 2.35 " in build_log
        assert "bundle check: OK (glibc floor 2.35)" in build_log
    done = run([sys.executable, "packaging/check_bundle.py", str(unpacked)])
    assert done.returncode == 0, done.stdout + done.stderr
    assert "bundle check: highest GLIBC version needed: 2.35 " in done.stdout
    # libstdc++ comes from the host: Ubuntu 22.04's (GCC 12) provides GLIBCXX_3.4.30.
    assert "highest GLIBCXX version needed (the host's libstdc++): 3.4.30 " in done.stdout


def test_glibc_check_fails_the_build_above_the_floor(unpacked: Path) -> None:
    done = run([sys.executable, "packaging/check_bundle.py", str(unpacked), "--glibc-floor", "2.34"])
    assert done.returncode == 1
    assert f"FAIL _internal/libpython{VERSION}.so.1.0 needs GLIBC_2.35 > 2.34" in done.stderr
    assert "bundle check: FAILED:" in done.stderr


def test_archive_fits_the_size_budget(build_log: str) -> None:
    size = ARCHIVE.stat().st_size
    print(f"archive {ARCHIVE.name}: {size / 1e6:.1f} MB")
    assert size <= ARCHIVE_BUDGET


def test_bundle_layout(unpacked: Path) -> None:
    internal = unpacked / "_internal"
    assert "BEGIN CERTIFICATE" in (internal / "grpc/_cython/_credentials/roots.pem").read_text()
    plugins = internal / "PySide6/Qt/plugins/platforms"
    assert (plugins / "libqoffscreen.so").is_file() and (plugins / "libqxcb.so").is_file()
    assert (internal / "resources/model_repository/face_detector/config.pbtxt").is_file()
    assert sample_in(unpacked).is_file()
    assert (internal / "resources/icons/triton-viewer.png").read_bytes()[:8] == PNG
    assert (internal / "pytriton/tritonserver/bin/tritonserver").stat().st_mode & 0o111
    # (SciPy is in: tracking needs it, through Norfair.)
    for other_binding in ("PyQt5", "PyQt6", "PySide2", "tkinter", "matplotlib", "skimage", "yaml", "jinja2"):
        assert not (internal / other_binding).exists(), other_binding
    # Left to the host: these would raise the glibc floor or must match the host's.
    names = {p.name for p in unpacked.rglob("*")}
    for host_library in (
        "libstdc++.so.6",
        "libgcc_s.so.1",
        "libexpat.so.1",
        "libz.so.1",
        "libfontconfig.so.1",
    ):
        assert host_library not in names, host_library
    assert "libxcb-cursor.so.0" in names  # what Qt 6 needs and desktops often lack: bundled


def test_runtime_shares_libpython_numpy_and_opencv_with_the_app(unpacked: Path) -> None:
    internal = unpacked / "_internal"
    runtime = internal / "python-runtime"
    assert (runtime / "bin" / "python3").stat().st_mode & 0o111
    assert (runtime / "lib" / f"python{VERSION.replace('.', '')}.zip").is_file()
    lib_dynload = runtime / "lib" / f"python{VERSION}" / "lib-dynload"
    assert lib_dynload.is_symlink() and lib_dynload.resolve() == (
        internal / f"python{VERSION}" / "lib-dynload"
    )

    def real_files(pattern: str) -> list[Path]:
        return [p for p in unpacked.rglob(pattern) if p.is_file() and not p.is_symlink()]

    # Stored once, used by both the app and the model stub.
    assert len(real_files("_multiarray_umath*.so")) == 1
    assert len(real_files("cv2*.so")) == 1
    assert len(real_files(f"libpython{VERSION}.so.1.0")) == 1


def test_runtime_imports_numpy_and_opencv_the_way_the_stub_does(unpacked: Path, tmp_path: Path) -> None:
    """The runtime's own python3, found on PATH as the stub finds it, with the stub's isolation."""
    internal = unpacked / "_internal"
    runtime = internal / "python-runtime"
    code = "import json, sys, numpy, cv2\n"
    code += "print(json.dumps([sys.prefix, sys.version, numpy.__file__, cv2.__file__]))"
    env = bare_env(tmp_path / "home", PATH=str(runtime / "bin"), LD_LIBRARY_PATH=str(internal))
    done = run_clean(["python3", "-I", "-c", code], env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    prefix, version, numpy_file, cv2_file = json.loads(done.stdout)
    assert Path(prefix) == runtime
    assert version == sys.version  # the build's Python: the same libpython as the app
    assert Path(numpy_file).is_relative_to(internal / "numpy")
    assert Path(cv2_file).is_relative_to(internal / "cv2")


# -- the program, as users run it -----------------------------------------------------------------
def test_smoke_test_runs_the_embedded_server_without_any_python(unpacked: Path, tmp_path: Path) -> None:
    env = bare_env(tmp_path / "home", QT_QPA_PLATFORM="offscreen")
    # A user's own `pip install --user` packages must not reach the models' Python either.
    user_numpy = tmp_path / "home" / ".local" / "lib" / f"python{VERSION}" / "site-packages" / "numpy"
    user_numpy.mkdir(parents=True)
    (user_numpy / "__init__.py").write_text('raise ImportError("the user\'s numpy was imported")\n')
    done = run_clean([f"./{NAME}/{NAME}", "--smoke-test"], env=env, cwd=unpacked.parent, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "smoke: embedded server at 127.0.0.1:" in done.stderr
    assert_astronaut_face(smoke_record(done.stdout))


def test_viewer_opens_the_sample_with_the_embedded_server_under_xvfb(unpacked: Path, tmp_path: Path) -> None:
    xvfb_run = shutil.which("xvfb-run")
    assert xvfb_run, "xvfb-run missing: packaging/system-deps.sh installs it (make test)"
    shot = tmp_path / "viewer.png"
    # xvfb-run needs the normal PATH; the viewer itself gets only the display and an empty rest.
    bare = 'home=$1; shift; exec env -i HOME="$home" PATH=/nonexistent DISPLAY="$DISPLAY" '
    bare += 'XAUTHORITY="$XAUTHORITY" QT_QPA_PLATFORM=xcb "$@"'
    (tmp_path / "home").mkdir()
    viewer = [f"./{NAME}/{NAME}", "--open", str(sample_in(unpacked)), "--screenshot", str(shot)]
    done = subprocess.run(
        [xvfb_run, "-a", "sh", "-c", bare, "sh", str(tmp_path / "home"), *viewer],
        cwd=unpacked.parent,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert shot.read_bytes()[:8] == PNG
    window = cv2.imread(str(shot))
    assert window is not None and window.shape[0] > 200 and window.shape[1] > 200
    assert float(window.std()) > 10  # a drawn window, not a blank frame


def test_frozen_serve_killed_leaves_no_server(unpacked: Path, tmp_path: Path) -> None:
    """The lifeline works in the frozen app too (its own /bin/sh watcher, the bundled server
    and runtime)."""
    env = bare_env(tmp_path / "home")
    with (
        open(tmp_path / "serve.err", "w") as err,
        subprocess.Popen(
            [str(unpacked / NAME), "serve"], stdout=subprocess.PIPE, stderr=err, text=True, env=env
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


def test_frozen_server_runs_the_pipelines(unpacked: Path, tmp_path: Path) -> None:
    """The two-stage models and their TensorFlow Lite stages run in the bundled runtime."""
    internal = unpacked / "_internal"
    assert (internal / "tflite_runtime" / "interpreter.pyc").is_file()
    for shared in ("mediapipe_rules.py", "pipeline_stages.py"):
        assert (internal / "resources" / "model_repository" / shared).is_file()
    env = bare_env(tmp_path / "home")
    with (
        open(tmp_path / "serve.err", "w") as err,
        subprocess.Popen(
            [str(unpacked / NAME), "serve"], stdout=subprocess.PIPE, stderr=err, text=True, env=env
        ) as proc,
        ended_at_exit(proc),
    ):
        assert proc.stdout is not None
        line = proc.stdout.readline()  # printed once every model is ready
        assert line.startswith("grpc="), (tmp_path / "serve.err").read_text()[-3000:]
        url = line.split()[0].removeprefix("grpc=")
        for model, count in (("face_mesh", 468), ("person_pose", 33)):
            done = run_clean(
                [str(unpacked / NAME), "infer", "--url", url, "--model", model, str(sample_in(unpacked))],
                env=env,
                cwd=tmp_path,
            )
            assert done.returncode == 0, done.stderr[-3000:]
            (detection,) = json.loads(done.stdout.splitlines()[0])["detections"]
            assert len(detection["keypoints"]) == count
        proc.terminate()


def test_smoke_test_against_a_given_server(unpacked: Path, triton: EmbeddedServer, tmp_path: Path) -> None:
    env = bare_env(tmp_path / "home", QT_QPA_PLATFORM="offscreen")
    done = run_clean([str(unpacked / NAME), "--smoke-test", "--url", triton.grpc_url], env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "start the embedded server" not in done.stderr
    assert_astronaut_face(smoke_record(done.stdout))


def test_frozen_tracking_and_compare_against_a_given_server(
    unpacked: Path, triton: EmbeddedServer, tmp_path: Path
) -> None:
    # Norfair (and the SciPy it needs) and its package metadata made it into the bundle.
    video = tmp_path / "face.avi"
    make_face_video(video, frames=20, fps=30, size=(320, 240))
    env = bare_env(tmp_path / "home", QT_QPA_PLATFORM="offscreen")
    exe = str(unpacked / NAME)
    done = run_clean([exe, "infer", "--track", "--url", triton.grpc_url, str(video)], env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert any(d.get("track_id") == 1 for r in records[:-1] for d in r["detections"]), done.stdout[-1000:]
    assert records[-1]["summary"]["tracks"][str(video)]["tracks"] >= 1
    compared = run_clean([exe, "compare", "--url", triton.grpc_url, str(video)], env=env, cwd=tmp_path)
    assert compared.returncode == 0, compared.stderr
    assert json.loads(compared.stdout.splitlines()[-1])["summary"]["agreement"] == 1.0


def test_python_named_by_the_user_runs_the_models(unpacked: Path, tmp_path: Path) -> None:
    # $TRITON_VIEWER_PYTHON replaces the bundled runtime: here the venv's (numpy<2 + OpenCV).
    env = bare_env(tmp_path / "home", QT_QPA_PLATFORM="offscreen", TRITON_VIEWER_PYTHON=sys.executable)
    done = run_clean([str(unpacked / NAME), "--smoke-test"], env=env, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "smoke: embedded server at 127.0.0.1:" in done.stderr
    assert_astronaut_face(smoke_record(done.stdout))


def test_unusable_python_named_by_the_user_is_reported(unpacked: Path, tmp_path: Path) -> None:
    env = bare_env(
        tmp_path / "home", QT_QPA_PLATFORM="offscreen", TRITON_VIEWER_PYTHON="/nonexistent/python3"
    )
    done = run_clean([str(unpacked / NAME), "--smoke-test"], env=env, cwd=tmp_path)
    assert done.returncode == 1
    assert "smoke test FAILED at embedded server: not available" in done.stderr
    assert "$TRITON_VIEWER_PYTHON=/nonexistent/python3: cannot run it" in done.stderr
    assert "numpy<2" in done.stderr and "unset it to use the Python bundled" in done.stderr
    assert "--url HOST:PORT" in done.stderr


# -- the desktop menu -----------------------------------------------------------------------------
def test_desktop_entry_puts_the_unpacked_app_in_the_menu_and_opens_files(
    unpacked: Path, triton: EmbeddedServer, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    env = bare_env(home)
    done = run_clean([str(unpacked / NAME), "--install-desktop-entry"], env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    entry = home / ".local/share/applications/triton-viewer.desktop"
    icon = home / ".local/share/icons/hicolor/256x256/apps/triton-viewer.png"
    assert f"wrote {entry}" in done.stdout
    validate = run(["desktop-file-validate", str(entry)])
    assert validate.returncode == 0 and validate.stdout == "", validate.stdout + validate.stderr

    fields = read_entry(entry)
    assert fields["Icon"] == str(icon) and icon.read_bytes()[:8] == PNG
    assert {"image/jpeg", "image/png", "video/mp4"} <= set(fields["MimeType"].split(";"))
    argv = exec_argv(fields["Exec"])
    assert argv == [str(unpacked / NAME), "%F"]  # the path has a space: quoted, and it round-trips

    # "Open with" in a file manager: the Exec line with %F replaced by the chosen file.
    shot = tmp_path / "opened.png"
    opened = [str(sample_in(unpacked)) if a == "%F" else a for a in argv]
    viewer_env = bare_env(home, QT_QPA_PLATFORM="offscreen")
    done = run_clean(
        [*opened, "--url", triton.grpc_url, "--screenshot", str(shot)], env=viewer_env, cwd=home, timeout=240
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert shot.read_bytes()[:8] == PNG

    done = run_clean([str(unpacked / NAME), "--uninstall-desktop-entry"], env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert not entry.exists() and not icon.exists()
