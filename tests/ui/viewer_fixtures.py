"""Fixtures and helpers for the tests of the whole window (real server, real qasync loop)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest
import qasync
from PySide6.QtWidgets import QApplication

from app.ui.qt_app import IO_WORKERS
from app.ui.viewer import Viewer, ViewerOptions


def write_png(path: Path, image_rgb: np.ndarray) -> Path:
    cv2.imwrite(str(path), cv2.cvtColor(image_rgb, cv2.COLOR_RGB2BGR))
    return path


def slow_image(delay_ms: int, size: int = 16) -> np.ndarray:
    """An image for `slow_faces`: pixel[0,0,0] x 10 ms of delay."""
    img = np.full((size, size, 3), 128, np.uint8)
    img[0, 0, 0] = delay_ms // 10
    return img


def image_folder(folder: Path, count: int, image: np.ndarray, corrupt: int = 0) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        write_png(folder / f"img_{i:04d}.png", image)
    for i in range(corrupt):
        # A PNG signature then garbage: found as an image by content, fails to decode.
        (folder / f"corrupt_{i}.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"garbage" * 20)
    return folder


async def until(condition: Callable[[], bool], timeout: float = 60.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


class Harness:
    """Runs coroutines on a per-test qasync loop and closes every viewer it made."""

    def __init__(self, app: QApplication, loop: qasync.QEventLoop) -> None:
        self.app, self.loop = app, loop
        self.executor = ThreadPoolExecutor(IO_WORKERS, thread_name_prefix="test-viewer-io")
        self.viewers: list[Viewer] = []

    def run(self, coro: Coroutine[Any, Any, Any], timeout: float = 120.0) -> Any:
        # run_forever, not qasync's run_until_complete: that one processes Qt's events once
        # more after the loop has stopped, with no running loop, and a task's step run there
        # failed ("no running event loop" from get_running_loop(): the task was lost).
        future = asyncio.ensure_future(asyncio.wait_for(coro, timeout), loop=self.loop)
        future.add_done_callback(lambda _done: self.loop.stop())
        try:
            self.loop.run_forever()
        finally:
            self.between_runs()
        if not future.done():
            raise RuntimeError("the loop stopped before the coroutine ended")
        return future.result()

    def between_runs(self) -> None:
        """Between two runs the test itself may process Qt events (processEvents, a widget
        shown), and with them qasync's callbacks: in the app the loop runs for the whole life
        of the window, so here it is marked running between runs too."""
        asyncio.events._set_running_loop(self.loop)

    def viewer(self, url: str | None, model: str | None = None, **kwargs: Any) -> Viewer:
        """A viewer on `url` (None: its own embedded server), shown and started."""
        urls = [url] if url is not None else []
        viewer = Viewer(ViewerOptions(urls=urls, model=model, **kwargs), self.executor)
        self.viewers.append(viewer)
        viewer.start()  # shows the window
        return viewer

    def connected(self, viewer: Viewer) -> None:
        self.run(until(lambda: viewer.connection.state == "connected", what="connected"))

    def close(self, viewer: Viewer) -> None:
        viewer.request_close()
        self.run(viewer.closed.wait(), timeout=30)

    def teardown(self) -> None:
        for viewer in self.viewers:
            if not viewer.closed.is_set():
                self.close(viewer)
        self.executor.shutdown(wait=True)


@pytest.fixture
def harness(qapp: QApplication, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Harness]:
    # Never the user's real settings.
    monkeypatch.setenv("TRITON_VIEWER_SETTINGS_DIR", str(tmp_path / "settings"))
    qapp.setQuitOnLastWindowClosed(False)
    loop = qasync.QEventLoop(qapp)
    asyncio.set_event_loop(loop)
    h = Harness(qapp, loop)
    h.between_runs()
    try:
        yield h
    finally:
        h.teardown()
        asyncio.events._set_running_loop(None)
        loop.close()
        asyncio.set_event_loop(None)
