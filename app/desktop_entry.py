"""The viewer in the desktop's menu, and files a file manager opens with it.

`triton-viewer --install-desktop-entry` writes a freedesktop.org desktop entry and the icon
under the user's data folder ($XDG_DATA_HOME, usually ~/.local/share): the menus of GNOME,
KDE, Xfce... list the viewer, and their file managers offer it under "Open with" for images
and videos. They start it as `triton-viewer FILE...`: those files are opened as with --open.
`--uninstall-desktop-entry` removes both files again.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from app.commands.arguments import path_argument
from app.resources import app_icon

APP_ID = "triton-viewer"
NAME = "Triton Inference Viewer"
# What the viewer opens (by content, app/sources/files.py); file managers match these types.
MIME_TYPES = (
    "image/jpeg",
    "image/png",
    "image/bmp",
    "image/tiff",
    "image/webp",
    "video/mp4",
    "video/quicktime",
    "video/x-msvideo",
    "video/x-matroska",
    "video/webm",
    "video/mpeg",
)
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
# Characters that make an Exec argument need quotes (Desktop Entry Specification, "Exec key").
_RESERVED = set(" \t\n\"'\\><~|&;$*?#()`")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The viewer's options for this: file arguments and the two desktop-entry actions."""
    parser.add_argument(
        "paths",
        type=path_argument,
        nargs="*",
        metavar="FILE",
        help='images, videos or folders to open, like --open (what a file manager\'s "Open with" passes)',
    )
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--install-desktop-entry",
        action="store_true",
        help="add the viewer to the desktop's menu and to file managers' \"Open with\" "
        "(writes a .desktop file and an icon under ~/.local/share), then exit",
    )
    group.add_argument(
        "--uninstall-desktop-entry",
        action="store_true",
        help="remove what --install-desktop-entry wrote, then exit",
    )


def handle(args: argparse.Namespace, commands: Sequence[str] = ()) -> int | None:
    """Run a desktop-entry action (its exit status), or fold file arguments into args.open (None).
    `commands`: the command line's commands, named when a file argument is none of them."""
    if args.install_desktop_entry:
        return _report(install)
    if args.uninstall_desktop_entry:
        return _report(uninstall)
    missing = [p for p in args.paths if not os.path.exists(p)]
    if missing:
        print(
            f"error: {', '.join(missing)}: no such file or folder (and not a command: {', '.join(commands)})",
            file=sys.stderr,
        )
        return EXIT_USAGE
    args.open = [*args.open, *args.paths]
    return None


def data_home() -> Path:
    """$XDG_DATA_HOME when set (and absolute, as the specification requires), else ~/.local/share."""
    value = os.environ.get("XDG_DATA_HOME", "")
    return Path(value) if os.path.isabs(value) else Path.home() / ".local" / "share"


def entry_path(home: Path) -> Path:
    return home / "applications" / f"{APP_ID}.desktop"


def icon_path(home: Path) -> Path:
    return home / "icons" / "hicolor" / "256x256" / "apps" / f"{APP_ID}.png"


def launch_command() -> list[str]:
    """How the menu starts this program: the frozen executable itself, else this Python with -m app."""
    if getattr(sys, "frozen", False):
        return [os.path.abspath(sys.executable)]
    return [os.path.abspath(sys.executable), "-m", "app"]


def exec_argument(arg: str) -> str:
    """One argument of an Exec line: quoted when needed, `%` doubled (the specification's rules)."""
    if "\n" in arg:
        raise ValueError(f"{arg!r}: a line break cannot be written into a desktop entry")
    arg = arg.replace("%", "%%")
    if arg and not (_RESERVED & set(arg)):
        return arg
    inner = "".join("\\" + c if c in '"`$\\' else c for c in arg)
    return f'"{inner}"'


def desktop_value(text: str) -> str:
    """A string value of a desktop entry: backslashes are escaped once more."""
    return text.replace("\\", "\\\\")


def render(command: list[str], icon: Path) -> str:
    exec_line = " ".join([*map(exec_argument, command), "%F"])
    lines = [
        "[Desktop Entry]",
        "Type=Application",
        "Version=1.4",
        f"Name={NAME}",
        "GenericName=Object detection viewer",
        "Comment=Live detections and request statistics for NVIDIA Triton Inference Server",
        f"Exec={desktop_value(exec_line)}",
        f"TryExec={desktop_value(command[0])}",
        f"Icon={desktop_value(str(icon))}",
        "Terminal=false",
        "Categories=Graphics;Viewer;",
        f"MimeType={';'.join(MIME_TYPES)};",
        "Keywords=Triton;inference;detection;camera;",
        f"StartupWMClass={APP_ID}",
    ]
    return "\n".join(lines) + "\n"


def install() -> list[str]:
    home = data_home()
    source_icon = app_icon()
    if not source_icon.is_file():
        raise OSError(f"the icon {source_icon} is missing from this installation")
    icon, entry = icon_path(home), entry_path(home)
    icon.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source_icon, icon)
    entry.parent.mkdir(parents=True, exist_ok=True)
    tmp = entry.with_suffix(".tmp")
    tmp.write_text(render(launch_command(), icon), encoding="utf-8")
    tmp.replace(entry)  # a menu watching the folder never reads a half-written entry
    _refresh_caches(home)
    return [
        f"wrote {entry}",
        f"wrote {icon}",
        f'"{NAME}" is now in the desktop\'s menu and in file managers\' "Open with" '
        "(run this again after moving the program)",
    ]


def uninstall() -> list[str]:
    home = data_home()
    removed = []
    for path in (entry_path(home), icon_path(home)):
        if path.exists():
            path.unlink()
            removed.append(f"removed {path}")
    _refresh_caches(home)
    return removed or [f"nothing to remove under {home}"]


def _refresh_caches(home: Path) -> None:
    """Let file managers see the new MIME associations now (best effort: most rescan anyway)."""
    tool = shutil.which("update-desktop-database")
    if tool and (home / "applications").is_dir():
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            subprocess.run(
                [tool, str(home / "applications")],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                check=False,
                timeout=30,
            )


def _report(action: Callable[[], list[str]]) -> int:
    try:
        lines = action()
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_FAILED
    for line in lines:
        print(line)
    return EXIT_OK
