"""GuiBridge's posting time (the X-ray's hand-over stage): only while `timed`, valid inside the
delivery, and the call order kept when it is turned on mid-stream."""

from __future__ import annotations

import threading
import time

from pytestqt.qtbot import QtBot

from app.ui.base.bridge import GuiBridge


def test_posted_time_only_while_timed_and_the_order_kept(qtbot: QtBot) -> None:
    bridge = GuiBridge()
    seen: list[tuple[int, float | None, float]] = []

    def slot(i: int) -> None:
        seen.append((i, bridge.posted_s, time.monotonic()))

    before = time.monotonic()

    def worker() -> None:
        for i in range(200):
            if i == 100:
                bridge.timed = True
            bridge.post(slot, i)

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    qtbot.waitUntil(lambda: len(seen) == 200, timeout=5000)
    assert [i for i, _, _ in seen] == list(range(200))  # one order across both signals
    assert all(posted is None for i, posted, _ in seen if i < 100)
    timed = [(posted, ran) for i, posted, ran in seen if i >= 100]
    assert all(posted is not None and before <= posted <= ran for posted, ran in timed)
    assert bridge.posted_s is None  # between deliveries
