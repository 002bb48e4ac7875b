"""The wall's Qt-free parts: its figures, its grid, its command line, its shared channels."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

from app.cli import build_parser
from app.commands.gui import single_camera, wall_cameras
from app.inference.core.session import TritonSession
from app.inference.core.shared_channels import SharedChannel, sharing_factory
from app.inference.protocol import parse_endpoints
from app.inference.transports.channel import ConnectionOptions
from app.pipeline.display import DisplayStats
from app.pipeline.live import LiveStats, StreamStats
from app.pipeline.wall_figures import StreamFigures, WallFigures
from app.sources.live import CaptureStats
from app.ui.wall.wall_widget import grid_columns


def figures(fps: float, p50: float | None, p95: float | None, dropped: int, shown: int = 10) -> StreamFigures:
    display = DisplayStats(shown, shown, 0, fps, p50, p95)
    live = LiveStats(CaptureStats(30.0, 100, 0, 30.0), StreamStats(100, 100 - dropped, dropped, 90, 2, fps))
    return StreamFigures.of(display, live)


def test_a_streams_figures_say_its_rate_latency_and_drops() -> None:
    f = figures(29.84, 41.2, 63.4, 12)
    assert f.text() == "29.8 fps · 41 ms · 12 dropped · p95 63 ms"
    assert (f.captured, f.dropped, f.in_flight) == (100, 12, 2)
    # Before anything was drawn: no latency, no run.
    empty = StreamFigures.of(DisplayStats(0, 0, 0, 0.0, None, None), None)
    assert empty.text() == "0.0 fps · 0 dropped" and empty.captured == 0


def test_the_walls_figures_add_up_its_streams_and_keep_the_worst_latency() -> None:
    wall = WallFigures.of(
        [
            figures(30.0, 40.0, 60.0, 3, 100),
            figures(20.0, 80.0, 120.0, 7, 50),
            figures(0.0, None, None, 0, 0),
        ],
        playing=2,
    )
    assert (wall.streams, wall.playing, wall.shown, wall.dropped) == (3, 2, 150, 10)
    assert wall.display_fps == 50.0 and (wall.worst_p50_ms, wall.worst_p95_ms) == (80.0, 120.0)
    assert wall.text() == (
        "3 streams (2 playing) · 50.0 frames/s shown · latency p50 up to 80 ms, p95 120 · 10 dropped"
    )
    assert WallFigures.of([], 0).text() == "0 streams (0 playing) · 0.0 frames/s shown · 0 dropped"


def test_tiles_are_laid_out_as_square_as_their_number_allows() -> None:
    assert [grid_columns(n) for n in range(1, 11)] == [1, 2, 2, 2, 3, 3, 3, 3, 3, 4]
    assert grid_columns(16) == 4 and grid_columns(30) == 4


def test_camera_once_is_the_single_view_and_more_than_once_the_wall() -> None:
    parser = build_parser(None)
    one = parser.parse_intermixed_args(["--camera", "0"])
    assert single_camera(one.camera) == "0" and wall_cameras(one.camera) == []
    many = parser.parse_intermixed_args(["--camera", "a.mp4", "--camera", "1", "--camera", "rtsp://h/s"])
    assert single_camera(many.camera) is None
    assert wall_cameras(many.camera) == ["a.mp4", "1", "rtsp://h/s"]
    none = parser.parse_intermixed_args([])
    assert single_camera(none.camera) is None and wall_cameras(none.camera) == []


class Recorder:
    """A channel that records the calls made on it."""

    def __init__(self, endpoint: Any) -> None:
        self.endpoint = endpoint
        self.protocol = endpoint.protocol
        self.in_flight = 5
        self.calls: list[str] = []
        self.closed = False

    def is_live(self, **_kwargs: Any) -> bool:
        self.calls.append("is_live")
        return True

    def close(self) -> None:
        self.closed = True


def test_a_shared_channel_sends_through_the_owners_and_never_closes_it() -> None:
    a, b = parse_endpoints(["127.0.0.1:9001", "127.0.0.2:9001"])
    owned = [Recorder(a), Recorder(a), Recorder(b)]
    loans: list[int] = []
    pool = SimpleNamespace(channels=owned, lend=lambda: loans.append(1), give_back=lambda: loans.append(-1))
    owner = cast(TritonSession, SimpleNamespace(pool=pool))
    factory = sharing_factory(owner)
    options = ConnectionOptions()
    first, second, third = factory(a, options), factory(a, options), factory(a, options)
    other = factory(b, options)
    inners = [cast(SharedChannel, ch)._inner for ch in (first, second, third, other)]
    assert inners == [owned[0], owned[1], owned[0], owned[2]], "the owner's channels, in turn"
    assert first.in_flight == 0, "its own count: the sharing session's pool balances on it"
    assert first.is_live(headers={}, timeout_s=1.0) and owned[0].calls == ["is_live"]
    assert sum(loans) == 4, "each channel handed out is on loan"
    first.close()
    first.close()
    assert not owned[0].closed, "the owner closes its channels"
    assert sum(loans) == 3, "closing gives it back, once"
