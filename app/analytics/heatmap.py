"""Where objects were: anchor density on a coarse grid over the last N seconds, as a colour
overlay on a frame and as a PNG (numpy and OpenCV, no Qt).

Each sighting adds the time it stands for (one frame period for a video) to its grid cell,
so a cell's value is the seconds objects spent there, whatever the frame rate. With a window,
the time is kept in `buckets` slices of window / buckets seconds; the oldest slice is dropped
as time moves on, so the map covers the last window (to within one slice) at a cost per frame
that does not grow with the window. Without one, everything seen is kept.
"""

from __future__ import annotations

import math
import os

import cv2
import numpy as np

from app.system.atomic_files import write_whole

CELL = 16  # pixels per grid cell: 120 x 68 cells for 1080p
BUCKETS = 12
ALPHA = 0.6  # the overlay's opacity where the map is hottest
MIN_HEAT = 0.02  # below this fraction of the hottest cell, the picture shows through untouched


class HeatMap:
    def __init__(
        self,
        width: int,
        height: int,
        *,
        cell: int = CELL,
        window_s: float | None = None,
        buckets: int = BUCKETS,
    ) -> None:
        if width <= 0 or height <= 0:
            raise ValueError(f"a heat map needs a frame size, got {width}x{height}")
        self.width, self.height = width, height
        self.cell = max(1, cell)
        self.cols, self.rows = math.ceil(width / self.cell), math.ceil(height / self.cell)
        self.window_s = window_s if window_s is not None and window_s > 0 else None
        slices = max(1, buckets) if self.window_s is not None else 1
        self._slices = np.zeros((slices, self.rows, self.cols), np.float64)
        self._slice_s = self.window_s / slices if self.window_s is not None else math.inf
        self._current: int | None = None  # the slice index (time / slice length) being filled

    def add(self, points: np.ndarray, time_s: float, weight_s: float) -> None:
        """Sightings at `time_s`, each standing for `weight_s` seconds; points outside the
        frame are left out. Call it on frames without sightings too: time moves the window."""
        slot = self._advance(time_s)
        points = np.asarray(points, np.float64).reshape(-1, 2)
        if not len(points) or weight_s <= 0:
            return
        cx = np.floor(points[:, 0] / self.cell).astype(np.int64)
        cy = np.floor(points[:, 1] / self.cell).astype(np.int64)
        # The bottom edge (y == height) belongs to the last row: a box touching the frame's foot.
        cy = np.where(points[:, 1] == self.height, self.rows - 1, cy)
        cx = np.where(points[:, 0] == self.width, self.cols - 1, cx)
        keep = (cx >= 0) & (cx < self.cols) & (cy >= 0) & (cy < self.rows)
        np.add.at(self._slices[slot], (cy[keep], cx[keep]), weight_s)

    def _advance(self, time_s: float) -> int:
        """The slot for `time_s`, clearing the slices that fell out of the window."""
        if self.window_s is None:
            return 0
        index = math.floor(time_s / self._slice_s)
        slices = len(self._slices)
        if self._current is None:
            self._current = index
        elif index > self._current:
            for k in range(1, min(index - self._current, slices) + 1):
                self._slices[(self._current + k) % slices] = 0.0
            self._current = index
        # Time going back (a stream restarted): the sightings go to the current slice.
        return self._current % slices

    def density(self, now_s: float | None = None) -> np.ndarray:
        """Seconds spent per cell, (rows, cols); `now_s` first moves the window to that time
        (a quiet stream's old sightings age out)."""
        if now_s is not None:
            self._advance(now_s)
        return self._slices.sum(axis=0)

    def render(self, frame: np.ndarray | None = None, *, alpha: float = ALPHA) -> np.ndarray:
        """The map over `frame` (RGB, any size: the map is stretched to it), or over black at
        the map's frame size; hot = red (OpenCV's JET colour map), scaled to the hottest cell.
        A new image; `frame` is not drawn on."""
        if frame is None:
            frame = np.zeros((self.height, self.width, 3), np.uint8)
        frame = np.ascontiguousarray(frame, np.uint8)
        layer = self._layer(alpha)
        if layer is None:
            return frame.copy()
        size = (frame.shape[1], frame.shape[0])
        # Coloured at four pixels per cell, stretched to the frame, then blended in OpenCV's
        # C++ with per-pixel weights: numpy arithmetic over a 1080p frame costs ~100 ms.
        colour, weights = layer
        colour = cv2.resize(colour, size, interpolation=cv2.INTER_LINEAR)
        weights = cv2.resize(weights, size, interpolation=cv2.INTER_LINEAR)
        return cv2.blendLinear(colour, frame, weights, 1.0 - weights)

    def layer_rgba(self, size: tuple[int, int] | None = None, *, alpha: float = ALPHA) -> np.ndarray:
        """The overlay alone as RGBA (straight alpha), at `size` (width, height; default four
        pixels per cell): for a viewer that paints it scaled over the picture instead of
        blending every frame here. Transparent where nothing was seen."""
        size = size or (self.cols * 4, self.rows * 4)
        out = np.zeros((size[1], size[0], 4), np.uint8)
        layer = self._layer(alpha)
        if layer is None:
            return out
        colour, weights = layer
        out[..., :3] = cv2.resize(colour, size, interpolation=cv2.INTER_LINEAR)
        weights = cv2.resize(weights, size, interpolation=cv2.INTER_LINEAR)
        out[..., 3] = cv2.convertScaleAbs(weights, alpha=255.0)
        return out

    def _layer(self, alpha: float) -> tuple[np.ndarray, np.ndarray] | None:
        """At four pixels per cell: the colours (RGB uint8) and the overlay's opacity (float32,
        0 where the map is colder than MIN_HEAT of its hottest cell); None for an empty map."""
        heat = self.density()
        peak = float(heat.max())
        if peak <= 0:
            return None
        fine = (self.cols * 4, self.rows * 4)
        smooth = cv2.GaussianBlur((heat / peak).astype(np.float32), (0, 0), sigmaX=1.0)
        smooth = cv2.resize(smooth, fine, interpolation=cv2.INTER_CUBIC)
        smooth = np.clip(smooth / max(float(smooth.max()), 1e-12), 0.0, 1.0)
        colour = cv2.cvtColor(
            cv2.applyColorMap(cv2.convertScaleAbs(smooth, alpha=255.0), cv2.COLORMAP_JET), cv2.COLOR_BGR2RGB
        )
        opacity = np.where(smooth >= MIN_HEAT, alpha * (0.35 + 0.65 * smooth), 0.0).astype(np.float32)
        return colour, opacity

    def png(self, frame: np.ndarray | None = None) -> bytes:
        """`render(frame)` encoded as PNG."""
        ok, data = cv2.imencode(".png", cv2.cvtColor(self.render(frame), cv2.COLOR_RGB2BGR))
        if not ok:
            raise ValueError("OpenCV could not encode the heat map as PNG")
        return data.tobytes()

    def save_png(self, path: str | os.PathLike[str], frame: np.ndarray | None = None) -> None:
        """Write the PNG whole or not at all (OSError naming `path`)."""
        write_whole(path, self.png(frame))
