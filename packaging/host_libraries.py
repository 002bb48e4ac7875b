"""System libraries the package leaves to the host instead of copying them from the build machine.

PyInstaller collects every shared library the Python extensions link, including the build
machine's own C++ runtime, zlib, fontconfig, glib, X11, D-Bus... Copied from a newer
distribution they raise the package's glibc floor (Debian 12's libstdc++ and libexpat need
glibc 2.36), and some must match the host anyway: the host's OpenGL driver needs the host's
(newer) libstdc++, fontconfig reads the host's configuration, glib/GTK/D-Bus talk to the
host's desktop. Every Linux desktop has all of these.

Libraries the wheels bring (Qt, OpenCV, numpy, the Triton server's) are never touched, and
neither are the small X helper libraries that desktops often lack (libxcb-cursor0 & co).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path

# Sonames (exact), grouped by why the host's copy is the right one.
HOST_SONAMES = {
    # C/C++ runtime: the host's GL drivers need the host's (newer) copy; Debian 12's needs glibc 2.36.
    "libstdc++.so.6",
    "libgcc_s.so.1",
    # Basic libraries of every system (libexpat from Debian 12 needs glibc 2.36).
    "libz.so.1",
    "libexpat.so.1",
    # Fonts: must read the host's fontconfig configuration.
    "libfontconfig.so.1",
    "libfreetype.so.6",
    # X11 core and the protocol extensions shipped with libxcb itself.
    "libX11.so.6",
    "libX11-xcb.so.1",
    "libxcb.so.1",
    # Desktop session services.
    "libdbus-1.so.3",
    "libsystemd.so.0",
    # glib: Qt's event loop integration and the GTK theme plugin use the host's.
    "libglib-2.0.so.0",
    "libgobject-2.0.so.0",
    "libgio-2.0.so.0",
    "libgmodule-2.0.so.0",
    "libgthread-2.0.so.0",
    # GTK's stack, for Qt's GTK3 theme plugin: useful only with the host's GTK.
    "libatk-1.0.so.0",
    "libcairo.so.2",
    "libcairo-gobject.so.2",
    "libpango-1.0.so.0",
    "libpangocairo-1.0.so.0",
    "libpangoft2-1.0.so.0",
    "libgdk_pixbuf-2.0.so.0",
    "libharfbuzz.so.0",
}
# libxcb's own extension libraries (libxcb-randr.so.0, ...) must match the host's libxcb.so.1;
# the separate xcb-util libraries (cursor, icccm, image, keysyms, render-util, util) stay bundled.
_XCB_EXTENSION = re.compile(
    r"^libxcb-(dri2|dri3|glx|present|randr|render|shape|shm|sync|xfixes|xinerama|xinput|xkb)\.so\.\d+$"
)
_SYSTEM_DIRS = ("/lib/", "/lib64/", "/usr/lib/", "/usr/lib64/")

Entry = tuple[str, str, str]  # PyInstaller TOC entry: (destination, source, typecode)


def is_host_library(soname: str) -> bool:
    return soname in HOST_SONAMES or bool(_XCB_EXTENSION.match(soname))


def _from_system(entry: Entry) -> bool:
    return entry[1].startswith(_SYSTEM_DIRS)


def without_host_libraries(
    binaries: Sequence[Entry], needed_by: Callable[[str], list[str]]
) -> tuple[list[Entry], list[str]]:
    """The binaries minus the host's libraries and the system libraries only they needed.

    needed_by(source path) gives a file's NEEDED sonames. Returns (kept, removed sonames).
    """
    kept = [e for e in binaries if not (_from_system(e) and is_host_library(Path(e[0]).name))]
    removed = sorted({Path(e[0]).name for e in binaries} - {Path(e[0]).name for e in kept})
    # Then, repeatedly, system libraries nothing left needs (e.g. libXau was there for libxcb).
    needs = {e[1]: set(needed_by(e[1])) for e in kept if e[2] in ("BINARY", "EXTENSION")}
    while True:
        wanted = set().union(*(needs[e[1]] for e in kept if e[1] in needs))
        orphans = [e for e in kept if e[2] == "BINARY" and _from_system(e) and Path(e[0]).name not in wanted]
        if not orphans:
            return kept, removed
        kept = [e for e in kept if e not in orphans]
        removed = sorted({*removed, *(Path(e[0]).name for e in orphans)})
