"""Find a `tritonserver` binary and the Python backend that goes with it."""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from app.server.errors import TritonNotFoundError
from app.server.stub_python import ENV_VAR, StubPython, find_stub_python

NGC_BINARY = Path("/opt/tritonserver/bin/tritonserver")

HOW_TO_GET_ONE = (
    "Install the Python package that ships it (`pip install nvidia-pytriton==0.7.0`, Linux x86_64/aarch64), "
    "pass --tritonserver PATH (e.g. inside an NGC Triton container: /opt/tritonserver/bin/tritonserver), "
    "or connect to a running server instead with --url HOST:PORT (the gRPC port, usually 8001)."
)


@dataclass(frozen=True)
class TritonInstall:
    """Where the server binary, the Python backend and its stub live."""

    binary: Path
    python_backend: Path  # folder with libtriton_python.so + triton_python_backend_utils.py
    stub: Path | None  # triton_python_backend_stub for the running Python, None if in python_backend already
    libs: tuple[Path, ...]  # extra shared-library folders the binary needs
    # The installation the stub runs models with; None: this interpreter's (not frozen).
    python: StubPython | None = None


def _python_version() -> str:
    return f"{sys.version_info.major}.{sys.version_info.minor}"


def _pytriton_root() -> Path | None:
    # find_spec locates the package without importing it (pytriton's import is slow and heavy).
    spec = importlib.util.find_spec("pytriton")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _stub_versions(server: Path) -> list[str]:
    return sorted(p.name for p in (server / "python_backend_stubs").iterdir())


def _from_pytriton(root: Path) -> TritonInstall | None:
    server = root / "tritonserver"
    binary = server / "bin" / "tritonserver"
    if not binary.is_file():
        return None
    stub = server / "python_backend_stubs" / _python_version() / "triton_python_backend_stub"
    if not stub.is_file():
        raise TritonNotFoundError(
            f"the tritonserver in {server} has no Python-backend stub for Python {_python_version()} "
            f"(it ships stubs for {', '.join(_stub_versions(server))})."
            " Use one of those Python versions, or --url to connect to a running server."
        )
    libs = root.parent / "nvidia_pytriton.libs"
    return TritonInstall(binary, server / "backends" / "python", stub, (libs,) if libs.is_dir() else ())


def _from_binary(binary: Path) -> TritonInstall:
    binary = binary.resolve()
    if not (binary.is_file() and os.access(binary, os.X_OK)):
        raise TritonNotFoundError(f"{binary} is not an executable tritonserver binary. {HOW_TO_GET_ONE}")
    python_backend = binary.parent.parent / "backends" / "python"
    if not (python_backend / "libtriton_python.so").is_file():
        raise TritonNotFoundError(
            f"{binary} has no Python backend next to it (looked for {python_backend}/libtriton_python.so)."
        )
    # An NGC container's backend folder already holds the stub built for its own Python.
    return TritonInstall(binary, python_backend, None, ())


NEEDS_PYTHON = (
    "The local Triton server runs its models in Python: {reason}. "
    "{env} must name a Python {versions} with numpy<2 and opencv-python-headless "
    "(e.g. the project's .venv/bin/python); unset it to use the Python bundled with this build. "
    "Or connect to a running Triton server with --url HOST:PORT (the gRPC port, usually 8001)."
)
BROKEN_BUNDLE = (
    "The local Triton server cannot run: {reason}; unpack the package again, or name a Python "
    "{versions} with numpy<2 and OpenCV as {env}=/path/to/python, "
    "or connect to a running server with --url HOST:PORT (the gRPC port, usually 8001)."
)


def _from_bundle(meipass: Path) -> TritonInstall:
    """A frozen build's copy of the wheel's server, with the Python runtime bundled beside it
    (or the one $TRITON_VIEWER_PYTHON names)."""
    root = meipass / "pytriton"
    server = root / "tritonserver"
    binary = server / "bin" / "tritonserver"
    if not binary.is_file():
        raise TritonNotFoundError(
            "this build of the viewer has no embedded Triton server. "
            "Connect to a running server with --url HOST:PORT (the gRPC port, usually 8001)."
        )
    versions = tuple(sorted(_stub_versions(server), key=lambda v: tuple(map(int, v.split(".")))))
    found = find_stub_python(versions, meipass)
    if isinstance(found, str):
        span = f"{versions[0]} to {versions[-1]}"
        template = NEEDS_PYTHON if os.environ.get(ENV_VAR) else BROKEN_BUNDLE
        raise TritonNotFoundError(template.format(reason=found, versions=span, env=ENV_VAR))
    stub = server / "python_backend_stubs" / found.version / "triton_python_backend_stub"
    libs = meipass / "nvidia_pytriton.libs"
    extra_libs = (libs,) if libs.is_dir() else ()
    return TritonInstall(binary, server / "backends" / "python", stub, extra_libs, found)


def find_tritonserver(explicit: str | os.PathLike[str] | None = None) -> TritonInstall:
    """The binary given, else the nvidia-pytriton wheel's (a frozen build's own copy), else one on
    PATH or in an NGC container."""
    if explicit:
        return _from_binary(Path(explicit))
    meipass = getattr(sys, "_MEIPASS", None)
    if getattr(sys, "frozen", False) and meipass:
        return _from_bundle(Path(meipass))
    root = _pytriton_root()
    if root is not None:
        found = _from_pytriton(root)
        if found is not None:
            return found
    on_path = shutil.which("tritonserver")
    if on_path:
        return _from_binary(Path(on_path))
    if NGC_BINARY.is_file():
        return _from_binary(NGC_BINARY)
    raise TritonNotFoundError(f"no tritonserver binary found. {HOW_TO_GET_ONE}")
