"""Lay out what the server process needs: a backend folder with the right stub, its environment."""

from __future__ import annotations

import os
import re
import shutil
import sys
import sysconfig
from pathlib import Path

from app.server.install import TritonInstall
from app.server.stub_python import clean_environment

_STANDARD_BIN = ("/usr/bin", "/bin")
# Characters a path may hold and still pass unquoted through a shell command line.
_SHELL_SAFE = re.compile(r"^[A-Za-z0-9_./+,:=@%-]+$")


def shell_safe_repository(repository: Path, workdir: Path, link_name: str = "model_repository") -> Path:
    """The model repository under a path without spaces or shell characters.

    The Python backend starts each stub with `bash -c "exec <stub> <model path> ..."`
    without quoting: a repository under e.g. "~/My Apps/" makes every model's stub fail
    (the server then never becomes live). Such a repository is reached through a
    symbolic link in the server's own work folder instead.
    """
    if _SHELL_SAFE.match(str(repository)):
        return repository
    link = workdir / link_name
    if not link.is_symlink():
        link.symlink_to(repository, target_is_directory=True)
    return link


def prepare_backend_dir(install: TritonInstall, workdir: Path) -> Path:
    """A backends/ folder whose python/ holds the backend library and the stub for this Python.

    Copies, not symlinks: the backend looks for the stub beside its own real path.
    """
    backends = workdir / "backends"
    target = backends / "python"
    target.mkdir(parents=True, exist_ok=True)
    for name in ("libtriton_python.so", "triton_python_backend_utils.py", "triton_python_backend_stub"):
        src = install.python_backend / name
        if src.is_file():
            shutil.copy2(src, target / name)
    if install.stub is not None:
        shutil.copy2(install.stub, target / "triton_python_backend_stub")
    return backends


def _interpreter_dir() -> str | None:
    """The folder of a `python3` that is this interpreter (a venv's bin/), if there is one."""
    if getattr(sys, "frozen", False):
        return None
    folder = Path(sys.executable).parent
    return str(folder) if (folder / "python3").exists() else None


def server_environment(install: TritonInstall, base: dict[str, str] | None = None) -> dict[str, str]:
    """The server's environment: only its own process gets these paths.

    - LD_LIBRARY_PATH: this interpreter's LIBDIR first, because the stub links
      libpython3.X.so and must get the same build as the venv (else models fail
      with "'_thread.RLock' object has no attribute '_recursion_count'"), then
      the wheel's bundled libraries.
    - PATH: this interpreter's folder first. The stub embeds an isolated Python
      that ignores PYTHONPATH and finds its prefix by looking up `python3` on
      PATH; finding the venv's, it reads its pyvenv.cfg and puts the venv's
      site-packages (numpy, OpenCV for the models) on sys.path. A frozen app
      puts its bundled runtime's bin/ there instead.
    - The Python backend starts each stub through `bash` found on PATH: when the
      user's PATH has none (an empty or odd environment) the standard folders follow.
    """
    # A frozen app's bootloader changed LD_LIBRARY_PATH for itself only: undo that for the child.
    env = clean_environment(base)
    # Frozen: the installation found on the machine (install.python) stands in for this interpreter.
    libdir = str(install.python.libdir) if install.python else sysconfig.get_config_var("LIBDIR")
    lib_paths = [p for p in [libdir, *map(str, install.libs)] if p]
    if env.get("LD_LIBRARY_PATH"):
        lib_paths.append(env["LD_LIBRARY_PATH"])
    env["LD_LIBRARY_PATH"] = os.pathsep.join(lib_paths)
    interpreter_dir = str(install.python.bindir) if install.python else _interpreter_dir()
    if interpreter_dir:
        env["PATH"] = os.pathsep.join([interpreter_dir, env.get("PATH", "")])
    if shutil.which("bash", path=env.get("PATH", "")) is None:
        env["PATH"] = os.pathsep.join(p for p in [env.get("PATH", ""), *_STANDARD_BIN] if p)
    # One OpenCV/BLAS thread per stub: several model instances each spawning a
    # thread per core slow a 2-core machine down by an order of magnitude.
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    return env
