"""Generated test videos: a moving face (real photograph) and frames that encode their own index."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import cv2
import numpy as np

# Head-and-shoulders crop of skimage.data.astronaut() (x0, y0, x1, y1), hair included.
HEAD_CROP = (135, 10, 315, 200)
# Where the face (skin, eyes to chin) lies inside that crop, at scale 1: (x1, y1, x2, y2).
FACE_IN_CROP = (45, 45, 135, 165)
BACKGROUND_RGB = (190, 200, 210)

INDEX_BITS = 10  # up to 1023 frames


def _writer(path: Path, fps: float, size: tuple[int, int]) -> cv2.VideoWriter:
    fourcc = "MJPG" if path.suffix.lower() == ".avi" else "mp4v"
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter.fourcc(*fourcc), float(fps), size)
    if not writer.isOpened():
        raise RuntimeError(f"cannot create {path} with {fourcc}")
    return writer


def head_image(scale: float = 1.0) -> np.ndarray:
    """The astronaut's head as RGB, resized by `scale`."""
    from skimage import data  # dev dependency: imported only when a face video is wanted

    x0, y0, x1, y1 = HEAD_CROP
    head = np.ascontiguousarray(data.astronaut()[y0:y1, x0:x1])
    if scale != 1.0:
        size = (round(head.shape[1] * scale), round(head.shape[0] * scale))
        head = cv2.resize(head, size, interpolation=cv2.INTER_AREA)
    return head


def face_positions(frames: int, size: tuple[int, int], head_size: tuple[int, int]) -> list[tuple[int, int]]:
    """Top-left of the pasted head per frame: left to right, with a gentle vertical wave."""
    width, height = size
    hw, hh = head_size
    margin_x = max((width - hw) // 20, 0)
    span_x = max(width - hw - 2 * margin_x, 0)
    mid_y = (height - hh) / 2
    amp_y = min(mid_y * 0.6, height * 0.08)
    positions = []
    for i in range(frames):
        t = i / max(frames - 1, 1)
        x = margin_x + round(span_x * (0.5 - 0.5 * math.cos(math.pi * t)))
        y = round(mid_y + amp_y * math.sin(2 * math.pi * t))
        positions.append((x, y))
    return positions


def face_scale_for(size: tuple[int, int]) -> float:
    """Scale of the head crop so it fills at most ~40% of the frame's width and half its height."""
    x0, y0, x1, y1 = HEAD_CROP
    return min(1.0, 0.4 * size[0] / (x1 - x0), 0.5 * size[1] / (y1 - y0))


def face_frame(size: tuple[int, int], position: tuple[int, int], head: np.ndarray) -> np.ndarray:
    """One RGB frame: plain background with the head pasted at `position`."""
    width, height = size
    frame = np.empty((height, width, 3), np.uint8)
    frame[:] = BACKGROUND_RGB
    x, y = position
    frame[y : y + head.shape[0], x : x + head.shape[1]] = head
    return frame


def face_box(position: tuple[int, int], scale: float) -> tuple[int, int, int, int]:
    """Approximate face box (x1, y1, x2, y2) in frame pixels for a head pasted at `position`."""
    fx1, fy1, fx2, fy2 = FACE_IN_CROP
    x, y = position
    return (x + round(fx1 * scale), y + round(fy1 * scale), x + round(fx2 * scale), y + round(fy2 * scale))


def make_face_video(
    path: str | Path, frames: int = 90, fps: float = 30, size: tuple[int, int] = (640, 480)
) -> list[tuple[int, int]]:
    """Write a video (.mp4 mp4v, or .avi MJPG) of a face moving across a plain background.

    Returns the head's top-left (x, y) per frame; the face itself is at
    `face_box(position, face_scale_for(size))`.
    """
    scale = face_scale_for(size)
    head = head_image(scale)
    positions = face_positions(frames, size, (head.shape[1], head.shape[0]))
    writer = _writer(Path(path), fps, size)
    try:
        for position in positions:
            writer.write(cv2.cvtColor(face_frame(size, position, head), cv2.COLOR_RGB2BGR))
    finally:
        writer.release()
    return positions


def index_frame(index: int, size: tuple[int, int]) -> np.ndarray:
    """RGB frame encoding `index`: INDEX_BITS black/white columns in the top half (MSB left),
    and a bright square whose x position is the index (mod the free width) in the bottom half."""
    width, height = size
    frame = np.zeros((height, width, 3), np.uint8)
    cell = width // INDEX_BITS
    for bit in range(INDEX_BITS):
        if index >> (INDEX_BITS - 1 - bit) & 1:
            frame[: height // 2, bit * cell : (bit + 1) * cell] = 255
    side = max(height // 6, 4)
    x = index % max(width - side, 1)
    frame[height - side - 2 : height - 2, x : x + side] = (255, 255, 255)
    return frame


def decode_index(image: np.ndarray) -> int:
    """The index `index_frame` encoded, read back from a (possibly compressed) RGB or BGR frame."""
    height, width = image.shape[:2]
    cell = width // INDEX_BITS
    gray = image.mean(axis=2) if image.ndim == 3 else image
    value = 0
    for bit in range(INDEX_BITS):
        x0, x1 = bit * cell + cell // 4, (bit + 1) * cell - cell // 4
        patch = gray[height // 8 : height // 2 - height // 8, x0 : max(x1, x0 + 1)]
        value = value << 1 | int(patch.mean() > 127)
    return value


def make_index_video(
    path: str | Path, frames: int, fps: float = 30, size: tuple[int, int] = (160, 120)
) -> None:
    """Write a video whose frame i shows `index_frame(i)`; read it back with `decode_index`."""
    if frames > 1 << INDEX_BITS:
        raise ValueError(f"at most {1 << INDEX_BITS} frames")
    writer = _writer(Path(path), fps, size)
    try:
        for i in range(frames):
            writer.write(cv2.cvtColor(index_frame(i, size), cv2.COLOR_RGB2BGR))
    finally:
        writer.release()


def make_person_video(
    path: str | Path, frames: int = 12, fps: float = 10.0, size: tuple[int, int] = (640, 512)
) -> None:
    """Write a video (.mp4 mp4v, or .avi MJPG) of the astronaut photo (head and upper body,
    512x512) sliding from the left edge to the right one of a grey canvas at least as big."""
    from skimage import data  # dev dependency: imported only when a person video is wanted

    person = cv2.cvtColor(data.astronaut(), cv2.COLOR_RGB2BGR)
    width, height = max(size[0], 512), max(size[1], 512)
    writer = _writer(Path(path), fps, (width, height))
    try:
        for i in range(frames):
            canvas = np.full((height, width, 3), 128, np.uint8)
            x = round((width - 512) * i / max(frames - 1, 1))
            canvas[height - 512 :, x : x + 512] = person
            writer.write(canvas)
    finally:
        writer.release()


def make_size_changing_video(path: Path, sizes: tuple[tuple[int, int], ...], frames_each: int = 10) -> Path:
    """An MPEG transport stream whose frame size changes: one MPEG-2 segment per size (W, H),
    concatenated (TS streams concatenate), each frame grey with its index written on it."""
    data = b""
    for n, (w, h) in enumerate(sizes):
        segment = path.with_name(f"{path.stem}.part{n}.ts")
        writer = cv2.VideoWriter(str(segment), cv2.VideoWriter.fourcc(*"mpg2"), 10, (w, h))
        assert writer.isOpened(), "OpenCV's FFmpeg cannot write MPEG-2"
        for i in range(frames_each):
            frame = np.full((h, w, 3), 60 + 60 * n, np.uint8)
            cv2.putText(
                frame, str(n * frames_each + i), (8, h // 2), cv2.FONT_HERSHEY_SIMPLEX, 1, (255, 255, 255), 2
            )
            writer.write(frame)
        writer.release()
        data += segment.read_bytes()
        segment.unlink()
    path.write_bytes(data)
    return path


def make_webcam_video(path: str | Path, frames: int, fps: float, size: tuple[int, int]) -> None:
    """Write an MJPG (.avi) video the way a webcam sends it: a detailed picture (the coffee
    photograph stretched over the frame) with the astronaut's head, half the frame's height
    (someone at a desk), moving across it. Its JPEGs weigh what a real camera's do (a plain background
    would make them several times smaller, and their decoding unrealistically cheap)."""
    from skimage import data  # dev dependency: imported only when a video is wanted

    background = cv2.resize(data.coffee(), size, interpolation=cv2.INTER_CUBIC)
    _x0, y0, _x1, y1 = HEAD_CROP
    head = head_image(size[1] * 0.55 / (y1 - y0))
    writer = _writer(Path(path), fps, size)
    try:
        for position in face_positions(frames, size, (head.shape[1], head.shape[0])):
            frame = background.copy()
            x, y = position
            frame[y : y + head.shape[0], x : x + head.shape[1]] = head
            writer.write(cv2.cvtColor(frame, cv2.COLOR_RGB2BGR))
    finally:
        writer.release()


def back_and_forth(waypoints: tuple[float, ...], speed: float, hold: int) -> list[float]:
    """x per frame: from each waypoint to the next at `speed` pixels per frame, resting `hold`
    frames at each one (the first and the last included)."""
    xs: list[float] = []
    for start, end in itertools.pairwise(waypoints):
        xs += [start] * hold
        steps = max(1, math.ceil(abs(end - start) / speed))
        xs += [start + (end - start) * k / steps for k in range(steps)]
    return [*xs, *[waypoints[-1]] * hold]


def make_crossing_video(
    path: str | Path,
    face_centres_x: list[float],
    fps: float = 30,
    size: tuple[int, int] = (640, 480),
) -> list[tuple[int, int]]:
    """A video of the astronaut's face whose centre is at `face_centres_x[i]` on frame i (at a
    fixed height, half-way down): the face's path is the truth the analytics tests count
    against. Returns the head's top-left per frame (see `face_box`)."""
    scale = face_scale_for(size)
    head = head_image(scale)
    fx1, _fy1, fx2, _fy2 = FACE_IN_CROP
    offset = (fx1 + fx2) / 2 * scale  # the face's centre from the head's left edge
    y = (size[1] - head.shape[0]) // 2
    positions = [(round(cx - offset), y) for cx in face_centres_x]
    for x, _ in positions:
        if not 0 <= x <= size[0] - head.shape[1]:
            raise ValueError(f"a face centre at x={x + offset} puts the head outside the {size} frame")
    writer = _writer(Path(path), fps, size)
    try:
        for position in positions:
            writer.write(cv2.cvtColor(face_frame(size, position, head), cv2.COLOR_RGB2BGR))
    finally:
        writer.release()
    return positions
