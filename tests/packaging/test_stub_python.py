"""Finding a Python installation for the server's model stub (what a frozen app needs)."""

from __future__ import annotations

import sys

import pytest

from app.server.availability import embedded_available
from app.server.stub_python import StubPython, clean_environment, probe

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
