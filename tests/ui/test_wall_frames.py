"""The wall of streams on a laptop screen with a real window manager (Xvfb + openbox, as
tests/ui/test_window_frames.py): at 1280x720 and 1024x640, with 4 and 6 streams playing, the
window's frame lies inside the screen, the wall inside the window, every tile inside the wall
with its picture, its boxes, its name and its figures shown; the focused stream gets at
least half of the window's height. tests/ui/wall_frames.py opens the windows."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from app.server.embedded import EmbeddedServer
from tests.ui.test_window_frames import ROOT, SCREENS, inside
from tests.ui.x_display import x_display

pytestmark = [pytest.mark.gui, pytest.mark.slow]
MIN_TILE_PICTURE = (120, 68)  # a tile's picture at least this big (16:9 at 120 px)


def walk_wall(url: str, size: tuple[int, int], tmp_path: Path) -> list[dict[str, Any]]:
    out = tmp_path / f"wall-{size[0]}x{size[1]}.json"
    with x_display(*size) as env:
        env["TRITON_VIEWER_SETTINGS_DIR"] = str(tmp_path / "settings")
        done = subprocess.run(
            [sys.executable, "-m", "tests.ui.wall_frames", url, str(out)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=400,
        )
    assert done.returncode == 0, done.stderr[-4000:]
    entries: list[dict[str, Any]] = json.loads(out.read_text())
    for entry in entries:
        print(
            f"{size}: {entry['name']}: frame {entry['frame']} wall {entry['wall']} minimum {entry['minimum']}"
        )
        for tile in entry["tiles"]:
            print(f"   tile {tile['title']}: {tile['rect']} picture {tile['view']} '{tile['figures']}'")
    return entries


@pytest.mark.parametrize("size", SCREENS, ids=lambda s: f"{s[0]}x{s[1]}")
def test_the_wall_fits_the_screen_with_every_tile_whole(
    size: tuple[int, int], triton: EmbeddedServer, tmp_path: Path
) -> None:
    entries = walk_wall(triton.grpc_url, size, tmp_path)
    assert [e["name"] for e in entries] == ["wall of 4", "wall of 6", "focused"]
    for entry in entries:
        name = entry["name"]
        assert entry["margins"][1] > 0, f"{name}: not framed by a window manager"
        assert inside(entry["frame"], entry["area"]), f"{name}: frame {entry['frame']} outside {size}"
        left, top, right, bottom = entry["margins"]
        width, height = entry["minimum"]
        assert width + left + right <= size[0] and height + top + bottom <= size[1], (
            f"{name}: the window cannot shrink below {entry['minimum']} (+ its frame) on {size}"
        )
        client = [0, 0, entry["client"][2], entry["client"][3]]
        if entry["page"] == "single":
            assert entry["picture"][3] >= client[3] / 2, f"{name}: the picture gets {entry['picture']}"
            # The focused stream (480x360) is decoded whole for the big view.
            assert entry["single_decoded"] == [480, 360], entry["single_decoded"]
            continue
        assert inside(entry["wall"], client), f"{name}: the wall {entry['wall']} outside the window {client}"
        for tile in entry["tiles"]:
            title = tile["title"]
            assert inside(tile["rect"], entry["wall"]), f"{name}: tile {title} {tile['rect']} cut off"
            assert inside(tile["view"], tile["rect"]) and inside(tile["figures_rect"], tile["rect"])
            assert tile["view"][2] >= MIN_TILE_PICTURE[0] and tile["view"][3] >= MIN_TILE_PICTURE[1], (
                f"{name}: tile {title}'s picture is {tile['view'][2:]}"
            )
            assert tile["boxes"] >= 1, f"{name}: tile {title} draws no box"
            assert tile["title_shown"] == title, f"{name}: the name {title} is cut to {tile['title_shown']}"
            assert "fps" in tile["figures"], f"{name}: tile {title} shows no figures"
    wall6 = entries[1]
    # Each tile decodes only what it shows: six tiles are narrower than half a 640x480 frame.
    for tile in wall6["tiles"][:4]:
        assert tile["source"] == [640, 480] and tile["decoded"][0] <= 320, tile
    rows = {tuple(t["rect"][1::2]) for t in wall6["tiles"]}
    assert len(wall6["tiles"]) == 6 and len(rows) == 2, "six tiles in two rows of three"
