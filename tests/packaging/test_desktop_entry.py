"""The desktop entry (`--install-desktop-entry`) and file arguments ("Open with") from the source
tree; test_frozen.py does the same with the packaged executable."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from app import desktop_entry
from app.cli import build_parser
from app.resources import sample_image
from tests.packaging.helpers import exec_argv, read_entry, run

PNG = b"\x89PNG\r\n\x1a\n"


def clean_env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "XDG_DATA_HOME"}
    env.update(HOME=str(home), **extra)
    return env


def install(home: Path, **extra: str) -> str:
    done = run([sys.executable, "-m", "app", "--install-desktop-entry"], env=clean_env(home, **extra))
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_install_writes_a_valid_entry_and_the_icon_under_local_share(tmp_path: Path) -> None:
    out = install(tmp_path)
    entry = tmp_path / ".local/share/applications/triton-viewer.desktop"
    icon = tmp_path / ".local/share/icons/hicolor/256x256/apps/triton-viewer.png"
    assert f"wrote {entry}" in out and f"wrote {icon}" in out
    validate = run(["desktop-file-validate", str(entry)])
    assert validate.returncode == 0 and validate.stdout == "", validate.stdout + validate.stderr
    fields = read_entry(entry)
    assert fields["Name"] == "Triton Inference Viewer"
    # From a checkout the menu runs this interpreter with -m app; %F: the files "Open with" passes.
    assert exec_argv(fields["Exec"]) == [sys.executable, "-m", "app", "%F"]
    assert fields["TryExec"] == sys.executable
    assert fields["Icon"] == str(icon) and icon.read_bytes()[:8] == PNG
    assert set(desktop_entry.MIME_TYPES) <= set(fields["MimeType"].split(";"))


def test_install_follows_xdg_data_home(tmp_path: Path) -> None:
    data = tmp_path / "data"
    install(tmp_path / "home", XDG_DATA_HOME=str(data))
    assert (data / "applications/triton-viewer.desktop").is_file()
    assert not (tmp_path / "home/.local/share/applications").exists()


def test_uninstall_removes_both_files_and_says_so_when_there_is_nothing(tmp_path: Path) -> None:
    install(tmp_path)
    entry = tmp_path / ".local/share/applications/triton-viewer.desktop"
    icon = tmp_path / ".local/share/icons/hicolor/256x256/apps/triton-viewer.png"
    cmd = [sys.executable, "-m", "app", "--uninstall-desktop-entry"]
    done = run(cmd, env=clean_env(tmp_path))
    assert done.returncode == 0, done.stderr
    assert f"removed {entry}" in done.stdout and f"removed {icon}" in done.stdout
    assert not entry.exists() and not icon.exists()
    again = run(cmd, env=clean_env(tmp_path))
    assert again.returncode == 0 and "nothing to remove" in again.stdout


@pytest.mark.parametrize(
    "path",
    ["/opt/triton-viewer/triton-viewer", "/home/a b/My Apps/triton-viewer", '/tmp/x$HOME`y`"z\\w/100%/run'],
)
def test_exec_line_round_trips_any_path(path: str, tmp_path: Path) -> None:
    fields_text = desktop_entry.render([path], tmp_path / "icon.png")
    exec_value = next(line for line in fields_text.splitlines() if line.startswith("Exec="))[len("Exec=") :]
    assert exec_argv(exec_value) == [path, "%F"]


def test_a_line_break_in_the_path_is_refused() -> None:
    with pytest.raises(ValueError, match="line break"):
        desktop_entry.exec_argument("/tmp/a\nb")


def test_file_arguments_open_like_open(tmp_path: Path) -> None:
    folder = tmp_path / "pictures"
    folder.mkdir()
    # As app/cli.py parses the viewer's arguments: files before, between and after options.
    args = build_parser(None).parse_intermixed_args([str(sample_image()), "--open", str(folder), str(folder)])
    assert desktop_entry.handle(args) is None  # not an action: the viewer runs
    assert args.open == [str(folder), str(sample_image()), str(folder)]


def test_a_missing_file_argument_is_named() -> None:
    done = run([sys.executable, "-m", "app", "infr"])
    assert done.returncode == 2
    commands = "serve, models, infer, bench, compare, repository, tune, evaluate, zones"
    assert f"infr: no such file or folder (and not a command: {commands})" in done.stderr
