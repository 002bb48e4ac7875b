"""The wall of streams on a real X display with a window manager: the main window's frame, the
wall and every tile (inside the window, none cut off), with 4 and with 6 streams playing, and
the single view while one is focused. Run by tests/ui/test_wall_frames.py:

    python -m tests.ui.wall_frames GRPC_URL OUT.json [SCREENSHOT_DIR]    (DISPLAY set, openbox running)

Writes one JSON object per state: {"name", "frame", "client", "margins", "area", "minimum",
"wall": [x, y, w, h] in the window, "tiles": [{"rect", "view", "title", "title_shown",
"figures"}], "picture"}. With SCREENSHOT_DIR, a PNG of the window in each state.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import qasync
from PySide6.QtCore import QRect
from PySide6.QtWidgets import QApplication, QWidget

from app.ui.qt_app import IO_WORKERS
from app.ui.viewer import Viewer, ViewerOptions
from tests.media import make_face_video
from tests.ui.window_frames import SETTLE_S, describe, framed, rect, until


def within(widget: QWidget, window: QWidget) -> list[int]:
    return rect(QRect(widget.mapTo(window, widget.rect().topLeft()), widget.size()))


def wall_entry(viewer: Viewer, name: str) -> dict[str, Any]:
    w, wall = viewer.window, viewer.wall
    minimum = w.minimumSizeHint()
    tiles = []
    for stream in wall.streams:
        tile = stream.tile
        tiles.append(
            {
                "rect": within(tile, w),
                "view": within(tile.view, w),
                "title": tile.title.text(),
                "title_shown": tile.title.shown_text(),
                "figures": tile.figures.text(),
                "figures_rect": within(tile.figures, w),
                "boxes": len(tile.view.box_items()),
                "decoded": [tile.view.shown_image().width(), tile.view.shown_image().height()],
                "source": list(tile.view.image_size() or (0, 0)),
            }
        )
    return describe(
        name,
        w,
        minimum=[minimum.width(), minimum.height()],
        wall=within(wall.widget, w),
        picture=within(w.view, w),
        page="wall" if w.pages.currentWidget() is wall.widget else "single",
        single_decoded=[w.view.shown_image().width(), w.view.shown_image().height()],
        tiles=tiles,
    )


async def boxes_everywhere(viewer: Viewer) -> None:
    print("waiting for boxes in", len(viewer.wall.streams), "tiles", file=sys.stderr, flush=True)
    await until(
        lambda: all(s.tile.view.box_items() and s.controller.meter.shown >= 10 for s in viewer.wall.streams),
        "boxes in every tile",
    )
    viewer.wall.refresh()
    await asyncio.sleep(SETTLE_S)


async def walk(
    url: str, work: Path, out: list[dict[str, Any]], shots: Path | None, executor: ThreadPoolExecutor
) -> None:
    videos = []
    for i, size in enumerate([(640, 480)] * 4 + [(480, 360)] * 2):
        path = work / f"camera-{i + 1}.avi"
        make_face_video(path, frames=60, fps=30, size=size)
        videos.append(str(path))
    viewer = Viewer(ViewerOptions(urls=[url], model="face_detector"), executor)
    try:
        await measure(viewer, videos, out, shots)
    finally:  # (the capture threads are not daemons: a failed walk must still end them)
        viewer.request_close()
        await viewer.closed.wait()


async def measure(viewer: Viewer, videos: list[str], out: list[dict[str, Any]], shots: Path | None) -> None:
    viewer.start()
    await until(lambda: viewer.connection.state == "connected", "connected")
    await framed(viewer.window)
    viewer.live_ui.toolbar.loop.setChecked(True)
    size = viewer.window.screen().size()
    tag = f"{size.width()}x{size.height()}"
    for video in videos[:4]:
        viewer.wall_ui.add_source(video)
    await boxes_everywhere(viewer)
    out.append(wall_entry(viewer, "wall of 4"))
    if shots is not None:
        viewer.window.grab().save(str(shots / f"wall-4-{tag}.png"))
    for video in videos[4:]:
        viewer.wall_ui.add_source(video)
    await boxes_everywhere(viewer)
    out.append(wall_entry(viewer, "wall of 6"))
    if shots is not None:
        viewer.window.grab().save(str(shots / f"wall-6-{tag}.png"))
    viewer.wall.focus(viewer.wall.streams[4])
    await until(lambda: bool(viewer.window.view.box_items()), "boxes in the single view")
    await asyncio.sleep(SETTLE_S)
    out.append(wall_entry(viewer, "focused"))
    if shots is not None:
        viewer.window.grab().save(str(shots / f"wall-focused-{tag}.png"))
    viewer.wall.unfocus()


def main() -> int:
    url, out_path = sys.argv[1], Path(sys.argv[2])
    shots = Path(sys.argv[3]) if len(sys.argv) > 3 else None
    app = QApplication.instance() or QApplication([sys.argv[0]])
    assert isinstance(app, QApplication)
    app.setQuitOnLastWindowClosed(False)
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    out: list[dict[str, Any]] = []
    executor = ThreadPoolExecutor(IO_WORKERS, thread_name_prefix="wall-frames-io")
    try:
        with tempfile.TemporaryDirectory(prefix="wall-frames-") as work:
            loop.run_until_complete(asyncio.wait_for(walk(url, Path(work), out, shots, executor), 300))
    finally:
        executor.shutdown(wait=True, cancel_futures=True)
        loop.close()
    out_path.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
