"""The Python installation the server's model stub runs with (bundled in a frozen app, or named by
$TRITON_VIEWER_PYTHON), and the server environment around it."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from app.server.availability import embedded_available
from app.server.install import find_tritonserver
from app.server.runtime import server_environment, shell_safe_repository
from app.server.stub_python import BUNDLED_RUNTIME, StubPython, bundled_stub_python, clean_environment, probe

VERSION = f"{sys.version_info.major}.{sys.version_info.minor}"


@pytest.mark.slow
def test_probe_accepts_this_venvs_python() -> None:
    # The venv has numpy<2 and OpenCV, and a python3 beside its interpreter.
    found = probe(sys.executable, [VERSION])
    assert isinstance(found, StubPython), found
    assert found.version == VERSION
    assert (found.bindir / "python3").exists()


def test_probe_names_a_missing_interpreter() -> None:
    found = probe("/nonexistent/python3", [VERSION])
    assert isinstance(found, str)
    assert found.startswith("/nonexistent/python3: cannot run it")


@pytest.mark.slow
def test_probe_rejects_a_python_version_without_a_stub() -> None:
    found = probe(sys.executable, ["3.8"])
    assert found == f"{sys.executable}: Python {VERSION}, the bundled stubs are for 3.8"


def test_clean_environment_keeps_a_source_runs_environment() -> None:
    env = {"LD_LIBRARY_PATH": "/opt/x", "LD_LIBRARY_PATH_ORIG": "/opt/y", "PATH": "/bin"}
    assert clean_environment(env) == env  # only a frozen app's bootloader needs undoing


def test_clean_environment_undoes_the_bootloaders_library_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    env = {"LD_LIBRARY_PATH": "/app/_internal:/opt/y", "LD_LIBRARY_PATH_ORIG": "/opt/y"}
    assert clean_environment(env) == {"LD_LIBRARY_PATH": "/opt/y"}
    assert clean_environment({"LD_LIBRARY_PATH": "/app/_internal"}) == {}


def test_embedded_server_is_available_from_the_source_tree() -> None:
    assert embedded_available() == (True, "")


def test_bundled_runtime_names_what_is_missing(tmp_path: Path) -> None:
    found = bundled_stub_python(tmp_path)
    assert isinstance(found, str)
    assert "Python runtime for the server is incomplete" in found
    assert str(tmp_path / BUNDLED_RUNTIME / "bin" / "python3") in found


def test_bundled_runtime_is_this_python_with_the_bundle_as_library_folder(tmp_path: Path) -> None:
    runtime = tmp_path / BUNDLED_RUNTIME
    (runtime / "bin").mkdir(parents=True)
    (runtime / "bin" / "python3").write_bytes(b"")
    (runtime / "lib" / f"python{VERSION}" / "lib-dynload").mkdir(parents=True)
    (runtime / "lib" / f"python{VERSION.replace('.', '')}.zip").write_bytes(b"")
    (tmp_path / f"libpython{VERSION}.so.1.0").write_bytes(b"")
    found = bundled_stub_python(tmp_path)
    assert found == StubPython(runtime / "bin" / "python3", VERSION, runtime / "bin", tmp_path)


def test_server_finds_bash_even_with_an_empty_path() -> None:
    # The Python backend starts every stub through `bash` looked up on PATH.
    env = server_environment(find_tritonserver(), base={"PATH": "/nonexistent"})
    assert shutil.which("bash", path=env["PATH"]) is not None
    assert env["PATH"].split(os.pathsep)[0] == os.path.dirname(sys.executable)  # the stub's python3 first


def test_a_repository_path_with_a_space_is_reached_through_a_link(tmp_path: Path) -> None:
    repo = tmp_path / "My Apps" / "models"
    repo.mkdir(parents=True)
    work = tmp_path / "work"
    work.mkdir()
    safe = shell_safe_repository(repo, work)
    assert " " not in str(safe) and safe.parent == work and safe.resolve() == repo
    assert shell_safe_repository(work, work) == work  # nothing to do
