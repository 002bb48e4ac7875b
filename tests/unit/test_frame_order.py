"""Results of a stream put back in frame order before they are recorded."""

from __future__ import annotations

import random

from app.pipeline.frame_order import FrameOrder


def arrivals(frames: int, limit: int, rng: random.Random) -> list[int]:
    """An order in which results may come with at most `limit` requests in flight: any of
    those in flight may finish first (a slow one can be overtaken by many)."""
    in_flight: list[int] = []
    arrived: list[int] = []
    for index in range(frames):
        if len(in_flight) == limit:
            arrived.append(in_flight.pop(rng.randrange(limit)))
        in_flight.append(index)
    rng.shuffle(in_flight)
    return arrived + in_flight


def test_frame_by_frame_every_frame_comes_out_in_order() -> None:
    rng = random.Random(7)
    for limit in (1, 2, 3, 5):
        order: FrameOrder[int] = FrameOrder(0, consecutive=True, max_waiting=1000)
        out = [i for index in arrivals(300, limit, rng) for i in order.push(index, index)]
        assert out + order.drain() == list(range(300)), limit


def test_failed_frames_are_gaps_that_do_not_hold_the_rest() -> None:
    order: FrameOrder[int] = FrameOrder(0, consecutive=True)
    out: list[int] = []
    for index in (1, 0, 2, 4, 3):
        out += order.push(index, None if index == 2 else index)
    assert out == [0, 1, 3, 4]


def test_live_waits_until_the_stream_is_quiet_or_too_much_waits() -> None:
    order: FrameOrder[int] = FrameOrder(0, consecutive=False, max_waiting=3)
    assert order.push(5, 5) == []  # frame 4 might still come (frames are dropped: unknown)
    assert order.push(4, 4) == []
    assert order.push(7, 7, quiet=True) == [4, 5, 7]  # nothing in flight: all safe
    assert order.push(9, 9) == [] and order.push(11, 11) == [] and order.push(10, 10) == []
    assert order.push(12, 12) == [9], "more than 3 waiting: the oldest goes"
    assert order.push(8, 8) == [], "older than what was written: left out"
    assert order.drain() == [10, 11, 12]


def test_a_recording_started_mid_stream_skips_what_came_before() -> None:
    order: FrameOrder[int] = FrameOrder(None, consecutive=True)
    assert order.push(20, 20) == [20]
    assert order.push(19, 19) == []
    assert order.push(21, 21) == [21]
