"""The Python installation inside the package that the server's Python-backend stub runs models with.

The stub embeds CPython through libpython3.X.so and finds its installation the way a `python3`
does: it looks up `python3` on PATH and searches upwards from it for lib/python3X.zip (the
standard library) and lib/python3.X/lib-dynload. It ignores PYTHONPATH, but its `site` reads
.pth files in lib/python3.X/site-packages. So, under the package's _internal/:

    python-runtime/bin/python3                    the build's interpreter (17 KB; a landmark,
                                                  and a working python3 with the runtime)
    python-runtime/lib/python3X.zip               the standard library, compiled (~5 MB)
    python-runtime/lib/python3.X/lib-dynload  ->  ../../../python3.X/lib-dynload (shared with the app)
    python-runtime/lib/python3.X/site-packages/triton-viewer.pth
                                              ->  "../../../..": _internal itself, where numpy and
                                                  cv2 are collected as files (shared with the app)

libpython3.X.so.1.0 is the app's own (_internal/); app/server/stub_python.py puts _internal
first in the server's LD_LIBRARY_PATH.
"""

from __future__ import annotations

import os
import sys
import sysconfig
import zipfile
from pathlib import Path

RUNTIME_DIR = "python-runtime"  # app/server/stub_python.py: BUNDLED_RUNTIME
VERSION = f"{sys.version_info.major}.{sys.version_info.minor}"
ZIP_NAME = f"python{sys.version_info.major}{sys.version_info.minor}.zip"
PTH_NAME = "triton-viewer.pth"

# Standard-library parts no model needs: test suites, GUI toolkits, installers, 2to3.
SKIPPED = {
    "test",
    "idlelib",
    "tkinter",
    "turtledemo",
    "ensurepip",
    "lib2to3",
    "distutils",
    "pydoc_data",
    "venv",
    "site-packages",
    "lib-dynload",
    "__pycache__",
    "turtle.py",
    "antigravity.py",
    "this.py",
}
# Extension modules of the standard library the app itself may not import but models might
# (collected into the shared lib-dynload as hidden imports; those needing other system
# libraries, like _sqlite3 or _curses, are left out).
EXTRA_EXTENSIONS = ["_elementtree", "_zoneinfo", "cmath", "_lsprof"]


def interpreter() -> Path:
    """The real interpreter binary behind this (venv) Python."""
    return Path(os.path.realpath(sys.executable))


def _not_a_test_suite(path: str) -> bool:
    return Path(path).name not in {"test", "tests", "idle_test"}  # e.g. unittest/test, ctypes/test


def build_stdlib_zip(dest: Path) -> Path:
    """The standard library as compiled modules in one zip (sourceless .pyc, like python3X.zip)."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_suffix(".tmp")
    with zipfile.PyZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED, optimize=0) as archive:
        for entry in sorted(stdlib.iterdir()):
            if entry.name in SKIPPED or entry.name.startswith("config-"):
                continue
            if (entry.is_dir() and (entry / "__init__.py").is_file()) or entry.suffix == ".py":
                archive.writepy(str(entry), filterfunc=_not_a_test_suite)
    tmp.replace(dest)
    return dest


def toc(workdir: Path, lib_dynload_dest: str) -> list[tuple[str, str, str]]:
    """PyInstaller TOC entries (destination, source or link target, typecode) of the runtime.

    lib_dynload_dest: where PyInstaller puts the app's standard-library extensions
    ("python3.11/lib-dynload").
    """
    build = workdir / RUNTIME_DIR
    stdlib_zip = build_stdlib_zip(build / ZIP_NAME)
    pth = build / PTH_NAME
    # Relative to the .pth's folder: runtime/lib/python3.X/site-packages -> _internal.
    pth.write_text("../../../..\n", encoding="ascii")
    lib = f"{RUNTIME_DIR}/lib"
    link_target = os.path.relpath(lib_dynload_dest, f"{lib}/python{VERSION}")
    return [
        (f"{RUNTIME_DIR}/bin/python3", str(interpreter()), "DATA"),
        (f"{lib}/{ZIP_NAME}", str(stdlib_zip), "DATA"),
        (f"{lib}/python{VERSION}/lib-dynload", link_target, "SYMLINK"),
        (f"{lib}/python{VERSION}/site-packages/{PTH_NAME}", str(pth), "DATA"),
    ]
