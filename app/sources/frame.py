"""The unit every source produces: one RGB image with its index and timing."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True)
class Frame:
    """One captured frame.

    index: 0-based position in the source (frames read, not frames delivered).
    image: RGB uint8, H x W x 3, C-contiguous.
    source: the path, URL or camera label the frame came from.
    timestamp: time.monotonic() when the frame was captured.
    pts_ms: position in the file in milliseconds when known, else None.
    """

    index: int
    image: np.ndarray
    source: str
    timestamp: float
    pts_ms: float | None = None
    # (width, height) of the source's own frames when `image` was decoded smaller (see
    # VideoFileReader's min_side, and live MJPG frames); None: the image is at the source's size.
    original_size: tuple[int, int] | None = None
    # The same picture as H x W x 4 bytes B, G, R, 255 for a screen to draw without converting
    # it (app.sources.grabs.bgr_to_display), when the frame was decoded for one; else None.
    display: np.ndarray | None = None
    # The JPEG packet a reduced frame was decoded from, to decode it again bigger (a view
    # zoomed in past it: app.sources.grabs.redecode); None for full-size frames.
    encoded: np.ndarray | None = None

    @property
    def source_size(self) -> tuple[int, int]:
        """(width, height) in the source's pixels (what boxes are reported in)."""
        return self.original_size or (self.width, self.height)

    @property
    def reduced(self) -> bool:
        """Decoded smaller than the source's frames."""
        return self.original_size is not None

    @property
    def width(self) -> int:
        return int(self.image.shape[1])

    @property
    def height(self) -> int:
        return int(self.image.shape[0])
