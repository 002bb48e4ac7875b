"""Live frames decoded at the size the view and the model need: the plan's arithmetic, JPEG
packets decoded smaller (and again bigger), grabs that are never decoded, and the capture
reading an MJPG file as packets."""

from __future__ import annotations

import threading
from pathlib import Path

import cv2
import numpy as np
import pytest

from app.pipeline.live_decode import DecodePlan, ViewNeed
from app.sources.frame import Frame
from app.sources.grabs import DecodeRequest, Grab, bgr_to_display, decode_packet, redecode
from app.sources.live import LiveCapture
from tests.media import decode_index, make_index_video

FULL_HD = (1920, 1080)


@pytest.fixture(scope="module")
def packet() -> np.ndarray:
    """A 1920x1080 JPEG with detail everywhere (noise over gradients), as a packet (1 x N bytes)."""
    rng = np.random.default_rng(7)
    x = np.linspace(0, 255, FULL_HD[0], dtype=np.float32)
    y = np.linspace(0, 255, FULL_HD[1], dtype=np.float32)[:, None]
    base = np.stack([x + 0 * y, y + 0 * x, (x + y) / 2], axis=2)
    bgr = np.clip(base + rng.normal(0, 20, base.shape), 0, 255).astype(np.uint8)
    ok, data = cv2.imencode(".jpg", bgr, [cv2.IMWRITE_JPEG_QUALITY, 90])
    assert ok
    return data.reshape(1, -1)


# ----- the plan -------------------------------------------------------------------------------


def test_fitted_view_needs_its_viewport_and_the_model_its_side() -> None:
    plan = DecodePlan(ViewNeed((886, 484)))
    # 1080p fitted into 886x484: 0.448 device px per source px -> 861 px on the longest side.
    assert plan.request(FULL_HD, model_side=256) == DecodeRequest(861, display=True)
    # A model needing more than the view wins.
    assert plan.request(FULL_HD, model_side=1280).min_side == 1280
    # A model that needs the whole picture (a stretch resize): full size.
    assert plan.request(FULL_HD, model_side=None).min_side is None


def test_zoom_and_device_pixel_ratio_raise_the_need_up_to_full_size() -> None:
    plan = DecodePlan(ViewNeed((886, 484), zoom=0.5 * 2.0))  # 50 % on a 2x screen
    assert plan.request(FULL_HD, 256).min_side is None  # one device px per source px: all of it
    plan.view = ViewNeed((886, 484), zoom=0.25)
    assert plan.request(FULL_HD, 256).min_side == 480
    plan.view = ViewNeed((886, 484), zoom=3.0)  # zoomed in past 1:1
    assert plan.request(FULL_HD, 256).min_side is None


def test_recording_and_headless_runs() -> None:
    plan = DecodePlan(ViewNeed((400, 300)))
    plan.full = True  # a recording: full size whatever the view shows
    assert plan.request(FULL_HD, 256) == DecodeRequest(None, display=True)
    headless = DecodePlan()  # nothing shows the frames: the model alone, no display buffer
    assert headless.request(FULL_HD, 256) == DecodeRequest(256, display=False)
    assert headless.request(None, 256).min_side is None  # size unknown: full


# ----- packets ----------------------------------------------------------------------------------


def test_a_packet_is_decoded_at_the_smallest_size_that_serves(packet: np.ndarray) -> None:
    full = cv2.imdecode(packet.reshape(-1), cv2.IMREAD_COLOR)
    for min_side, expected in ((None, 1920), (1000, 1920), (960, 960), (861, 960), (480, 480), (100, 240)):
        decoded = decode_packet(packet, DecodeRequest(min_side, display=True))
        assert decoded is not None
        rgb, display, size = decoded
        assert size == FULL_HD
        assert rgb.shape[1] == expected and rgb.flags.c_contiguous
        assert display is not None and display.shape == (*rgb.shape[:2], 4)
        # The display buffer is the same picture: B, G, R, 255 per pixel.
        assert np.array_equal(display[..., 2::-1], rgb) and (display[..., 3] == 255).all()
    rgb_full, _, _ = decode_packet(packet, DecodeRequest(None)) or (None, None, None)
    assert rgb_full is not None and np.array_equal(rgb_full, full[..., ::-1])


def test_a_grab_decodes_once_and_a_reduced_frame_decodes_again_bigger(packet: np.ndarray) -> None:
    grab = Grab(5, "cam", 12.0, None, packet=packet)
    assert grab.size == FULL_HD
    small = grab.decode(DecodeRequest(480, display=True))
    assert small is not None and small.width == 480 and small.reduced
    assert small.source_size == FULL_HD and small.original_size == FULL_HD
    assert small.index == 5 and small.timestamp == 12.0 and small.encoded is packet
    assert grab.decode(DecodeRequest(400, display=True)) is small  # already good enough
    assert grab.decode(DecodeRequest(None)) is not small  # full size asked for: decoded again

    sharper = redecode(small, 960)
    assert sharper is not None and sharper.width == 960 and sharper.display is not None
    whole = redecode(small, None)
    assert whole is not None and not whole.reduced and whole.encoded is None
    expected = cv2.imdecode(packet.reshape(-1), cv2.IMREAD_COLOR)
    assert np.array_equal(whole.image, expected[..., ::-1])
    assert redecode(sharper, 900) is None  # big enough already
    assert redecode(whole, None) is None  # full size has no packet to decode again


def test_a_broken_packet_does_not_decode(packet: np.ndarray) -> None:
    broken = packet.copy()
    broken[0, 200:] = 0  # the header survives, the entropy-coded data does not
    grab = Grab(0, "cam", 0.0, None, packet=broken[:, :300])
    assert grab.decode(DecodeRequest(480)) is None


def test_a_picture_grab_is_retrieved_only_when_decoded_and_only_before_the_next_grab() -> None:
    calls: list[int] = []
    bgr = np.zeros((48, 64, 3), np.uint8)
    bgr[..., 2] = 200  # red

    def retrieve() -> np.ndarray:
        calls.append(1)
        return bgr

    grab = Grab(0, "cam", 0.0, None, retrieve=retrieve)
    assert calls == []  # grabbing converts nothing
    frame = grab.decode(DecodeRequest(None, display=True))
    assert frame is not None and calls == [1]
    assert tuple(frame.image[0, 0]) == (200, 0, 0) and frame.display is not None
    assert np.array_equal(frame.display, bgr_to_display(bgr))
    late = Grab(1, "cam", 0.0, None, retrieve=retrieve)
    late.expire()  # the capture moved on
    with pytest.raises(RuntimeError, match="after its capture moved on"):
        late.decode()


# ----- the capture ----------------------------------------------------------------------------------


def test_an_mjpg_file_is_read_as_packets_and_nothing_is_decoded_unasked(tmp_path: Path) -> None:
    path = tmp_path / "index.avi"  # MJPG
    make_index_video(path, frames=20, fps=30, size=(320, 240))
    grabs: list[Grab] = []
    decoded: list[Frame] = []
    ended = threading.Event()

    def on_grab(grab: Grab) -> None:
        grabs.append(grab)
        if grab.index % 5 == 0:  # take one frame in five
            frame = grab.decode(DecodeRequest(160))
            assert frame is not None
            decoded.append(frame)

    capture = LiveCapture(path, on_grab=on_grab, on_end=ended.set, realtime=False)
    capture.start()
    assert ended.wait(5)
    assert capture.stop()
    assert [g.index for g in grabs] == list(range(20))
    assert all(g.packet is not None and g.size == (320, 240) for g in grabs)
    assert [f.index for f in decoded] == [0, 5, 10, 15]
    assert all(f.width == 160 and f.source_size == (320, 240) for f in decoded)  # decoded at 1/2
    assert [decode_index(f.image) for f in decoded] == [0, 5, 10, 15]
    assert capture.latest() is None  # on_grab's consumer decodes: nothing else sees frames
    assert capture.stats().captured == 20
