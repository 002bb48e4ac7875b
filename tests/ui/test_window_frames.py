"""Every window of the viewer on a laptop screen with a real window manager (Xvfb + openbox:
title bars and borders as on a desktop): its frame lies inside the screen at 1280x720 and
1024x640, the secondary windows close with Esc and Ctrl+W, and the picture gets at least
half of the main window's height. tests/ui/window_frames.py walks the windows."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from app.server.embedded import EmbeddedServer
from tests.ui.x_display import x_display

pytestmark = [pytest.mark.gui, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
SCREENS = [(1280, 720), (1024, 640)]
CLOSED_BY = {  # the key each window is closed with in the walk (the platform's habits)
    "keyboard shortcuts": "Ctrl+W",
    "about": "Esc",
    "load test": "Ctrl+W",
    "A/B compare": "Ctrl+W",
    "compare with… (Esc)": "Esc",
    "A/B compare (Esc)": "Esc",
    "tune": "Esc",
    "repository": "Ctrl+W",
    "evaluate against labels": "Esc",
    "open a camera": "Esc",
    "connect to a server": "Esc",
    "open images (file dialog)": "Esc",
    "record (file dialog)": "Esc",
}


def inside(inner: list[int], outer: list[int]) -> bool:
    x, y, w, h = inner
    ox, oy, ow, oh = outer
    return x >= ox and y >= oy and x + w <= ox + ow and y + h <= oy + oh


def walk_windows(url: str, size: tuple[int, int], tmp_path: Path) -> list[dict[str, Any]]:
    out = tmp_path / f"frames-{size[0]}x{size[1]}.json"
    with x_display(*size) as env:
        env["TRITON_VIEWER_SETTINGS_DIR"] = str(tmp_path / "settings")
        done = subprocess.run(
            [sys.executable, "-m", "tests.ui.window_frames", url, str(out)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
    assert done.returncode == 0, done.stderr[-4000:]
    entries: list[dict[str, Any]] = json.loads(out.read_text())
    for entry in entries:
        if "minimum" not in entry:  # (the dock combinations: the largest minimum is printed)
            print(f"{size}: {entry['name']}: frame {entry['frame']} picture {entry.get('picture')}")
    combos = [e for e in entries if "minimum" in e]
    if combos:
        widest = max(combos, key=lambda e: e["minimum"][0])
        tallest = max(combos, key=lambda e: e["minimum"][1])
        print(f"{size}: {len(combos)} dock combinations; widest {widest['minimum']} ({widest['name']})")
        print(f"{size}: tallest minimum {tallest['minimum']} ({tallest['name']})")
    return entries


@pytest.mark.parametrize("size", SCREENS, ids=lambda s: f"{s[0]}x{s[1]}")
def test_every_window_fits_the_screen_with_its_frame_in_every_dock_combination_and_closes_with_its_keys(
    size: tuple[int, int], triton: EmbeddedServer, tmp_path: Path
) -> None:
    entries = walk_windows(triton.grpc_url, size, tmp_path)
    names = {e["name"] for e in entries}
    assert set(CLOSED_BY) <= names, set(CLOSED_BY) - names
    for entry in entries:
        name = entry["name"]
        assert entry["margins"][1] > 0, f"{name}: not framed by a window manager"
        assert entry["area"] == [0, 0, *size]
        assert inside(entry["frame"], entry["area"]), f"{name}: frame {entry['frame']} outside {size}"
        if name in CLOSED_BY:
            assert entry["closed_by"] == CLOSED_BY[name], f"{name} does not close with {CLOSED_BY[name]}"
    combos = [e for e in entries if "minimum" in e]
    assert len(combos) == 2 * 2**9, "every combination of the 9 docks, tabbed and stacked"
    for entry in combos:
        left, top, right, bottom = entry["margins"]
        width, height = entry["minimum"]
        assert width + left + right <= size[0] and height + top + bottom <= size[1], (
            f"{entry['name']}: the window cannot shrink below {entry['minimum']} (+ its frame) on {size}"
        )
    for mode in ("batch", "live"):
        (main,) = [e for e in entries if e["name"] == f"main window ({mode})"]
        client_height = main["client"][3]
        picture_height = main["picture"][3]
        assert picture_height >= client_height / 2, (
            f"{mode}: the picture gets {picture_height} of {client_height}"
        )
        _x, y, _w, h = main["status_bar"]
        assert y + h <= client_height, "the status bar is inside the window"
