"""A Python installation for the Python-backend stub when the app itself is frozen.

The stub (the process that runs the models) embeds CPython through
`libpython3.X.so` and needs a real installation: the standard library and
numpy<2 + OpenCV for the bundled models. The package carries one
(packaging/python_runtime.py builds it): `python-runtime/` beside the app's own
libpython, numpy and cv2, which it shares. The user may name another with
$TRITON_VIEWER_PYTHON, probed in a subprocess; `python3` on PATH is never used.
"""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ENV_VAR = "TRITON_VIEWER_PYTHON"
BUNDLED_RUNTIME = "python-runtime"  # under sys._MEIPASS; packaging/python_runtime.py: RUNTIME_DIR
_UNRUNNABLE = "exited with status"
PROBE_TIMEOUT_S = 60.0  # first import of cv2 from a cold disk cache can take a while

# Run with -I: the stub's embedded interpreter is isolated too (no PYTHONPATH, no user site),
# so only what this probe sees will be importable by the models.
_PROBE = r"""
import json, os, sys, sysconfig
out = {"version": "%d.%d" % sys.version_info[:2], "executable": sys.executable,
       "libdir": sysconfig.get_config_var("LIBDIR") or "",
       "soname": sysconfig.get_config_var("INSTSONAME") or ""}
try:
    import numpy
    out["numpy"] = numpy.__version__
except Exception as e:
    out["numpy_error"] = "%s: %s" % (type(e).__name__, e)
try:
    import cv2
    out["cv2"] = cv2.__version__
except Exception as e:
    out["cv2_error"] = "%s: %s" % (type(e).__name__, e)
print(json.dumps(out))
"""


@dataclass(frozen=True)
class StubPython:
    """An interpreter whose installation the stub can use."""

    executable: Path
    version: str  # "3.11"
    bindir: Path  # holds a `python3` the stub finds on PATH (it derives its prefix from it)
    libdir: Path  # where libpython3.X.so.1.0 is: first in the stub's LD_LIBRARY_PATH


# Secrets the server and its models' backends never need, and could show (every model's
# process inherits the server's environment, readable in /proc/PID/environ by the same user):
# the app's own headers variable and anything named like a credential.
SECRET_VARIABLES = frozenset({"TRITON_VIEWER_HEADERS"})
_SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|CREDENTIAL|PRIVATE_KEY", re.IGNORECASE)


def is_secret_variable(name: str) -> bool:
    """An environment variable that carries a secret (it stays out of child processes)."""
    return name in SECRET_VARIABLES or _SECRET_NAME.search(name) is not None


def clean_environment(base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment without secrets (`is_secret_variable`) and without what a PyInstaller
    bootloader changed for its own process.

    The bootloader puts its _internal/ folder first in LD_LIBRARY_PATH (saving the
    original in LD_LIBRARY_PATH_ORIG): a child would load the bundle's libpython,
    OpenSSL... instead of its own.
    """
    env = dict(os.environ if base is None else base)
    for name in [n for n in env if is_secret_variable(n)]:
        del env[name]
    if getattr(sys, "frozen", False):
        original = env.pop("LD_LIBRARY_PATH_ORIG", None)
        if original:
            env["LD_LIBRARY_PATH"] = original
        else:
            env.pop("LD_LIBRARY_PATH", None)
    return env


def _version_key(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split(".") if x.isdigit())


def probe(executable: str, versions: Sequence[str]) -> StubPython | str:
    """The StubPython for `executable`, or why it cannot serve (a sentence naming it)."""
    try:
        done = subprocess.run(
            [executable, "-I", "-c", _PROBE],
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT_S,
            env=clean_environment(),
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"{executable}: cannot run it ({e})"
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return f"{executable}: {_UNRUNNABLE} {done.returncode} ({last})"
    try:
        info = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return f"{executable}: unexpected output {done.stdout[:200]!r}"
    version = info["version"]
    if version not in versions:
        return f"{executable}: Python {version}, the bundled stubs are for {', '.join(versions)}"
    if "numpy" not in info:
        return f"{executable}: no numpy ({info.get('numpy_error', '?')})"
    if _version_key(info["numpy"])[0] >= 2:
        return f"{executable}: numpy {info['numpy']}, the server's Python backend needs numpy<2"
    if "cv2" not in info:
        return f"{executable}: no OpenCV ({info.get('cv2_error', '?')})"
    exe = Path(info["executable"])
    bindir = exe.parent
    if not (bindir / "python3").exists():
        return f"{executable}: no `python3` beside {exe} (the stub finds its installation through it)"
    libdir = Path(info["libdir"])
    soname = info["soname"] or f"libpython{version}.so.1.0"
    if not (libdir / soname).exists() and not _system_has(f"libpython{version}.so.1.0"):
        return f"{executable}: no shared libpython{version}.so.1.0 (install libpython{version})"
    return StubPython(exe, version, bindir, libdir)


def _system_has(soname: str) -> bool:
    for folder in ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib"):
        if Path(folder, soname).exists():
            return True
    return False


def bundled_stub_python(root: Path) -> StubPython | str:
    """The runtime inside a frozen build whose files are under root (sys._MEIPASS), or what is
    missing from it. It is this very Python: same version, same libpython."""
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    runtime = root / BUNDLED_RUNTIME
    required = [
        runtime / "bin" / "python3",
        runtime / "lib" / f"python{version.replace('.', '')}.zip",
        runtime / "lib" / f"python{version}" / "lib-dynload",
        root / f"libpython{version}.so.1.0",
    ]
    missing = [str(p) for p in required if not p.exists()]
    if missing:
        return f"this build's Python runtime for the server is incomplete (missing {', '.join(missing)})"
    return StubPython(runtime / "bin" / "python3", version, runtime / "bin", root)


@functools.cache
def _probe_cached(executable: str, versions: tuple[str, ...]) -> StubPython | str:
    return probe(executable, versions)


def find_stub_python(versions: tuple[str, ...], bundle_root: Path) -> StubPython | str:
    """$TRITON_VIEWER_PYTHON when set (probed once: it starts a subprocess that imports numpy
    and OpenCV, about a second), else the runtime bundled under bundle_root."""
    explicit = os.environ.get(ENV_VAR)
    if explicit:
        found = _probe_cached(explicit, versions)
        return found if isinstance(found, StubPython) else f"${ENV_VAR}={found}"
    return bundled_stub_python(bundle_root)
