"""A Python installation for the Python-backend stub when the app itself is frozen.

The stub (the process that runs the models) embeds CPython through
`libpython3.X.so` and needs a real installation: the standard library as files
and numpy<2 + OpenCV for the bundled models. A PyInstaller build has neither,
so a frozen app borrows one found on the machine: $TRITON_VIEWER_PYTHON, else
`python3`/`python3.X` on PATH. Each candidate is probed in a subprocess.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ENV_VAR = "TRITON_VIEWER_PYTHON"
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


def clean_environment(base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment without what a PyInstaller bootloader changed for its own process.

    The bootloader puts its _internal/ folder first in LD_LIBRARY_PATH (saving the
    original in LD_LIBRARY_PATH_ORIG): a child would load the bundle's libpython,
    OpenSSL... instead of its own.
    """
    env = dict(os.environ if base is None else base)
    if getattr(sys, "frozen", False):
        original = env.pop("LD_LIBRARY_PATH_ORIG", None)
        if original:
            env["LD_LIBRARY_PATH"] = original
        else:
            env.pop("LD_LIBRARY_PATH", None)
    return env


def _candidates(versions: Sequence[str]) -> list[str]:
    explicit = os.environ.get(ENV_VAR)
    if explicit:
        return [explicit]
    names = ["python3", *(f"python{v}" for v in sorted(versions, key=_version_key, reverse=True))]
    found: list[str] = []
    seen: set[str] = set()
    for name in names:
        path = shutil.which(name)
        if path and os.path.realpath(path) not in seen:
            seen.add(os.path.realpath(path))
            found.append(path)
    return found


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


@functools.cache
def find_stub_python(versions: tuple[str, ...]) -> StubPython | str:
    """The first usable installation, or one message listing every candidate and its problem.

    Cached: probing starts subprocesses that import numpy and OpenCV (about a second each).
    """
    reasons: list[str] = []
    explicit = bool(os.environ.get(ENV_VAR))
    for candidate in _candidates(versions):
        found = probe(candidate, versions)
        if isinstance(found, StubPython):
            return found
        # Shims (pyenv) for versions not installed just fail to run: not worth a word,
        # unless the user named that interpreter; and one interpreter found under two names once.
        if (explicit or _UNRUNNABLE not in found) and found.split(": ", 1)[1:] not in [
            r.split(": ", 1)[1:] for r in reasons
        ]:
            reasons.append(found)
    if not reasons:
        where = f"${ENV_VAR}" if os.environ.get(ENV_VAR) else "no python3 on PATH"
        reasons.append(where)
    return "; ".join(reasons)
