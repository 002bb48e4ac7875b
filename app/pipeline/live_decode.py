"""How big live frames are decoded: no bigger than what serves both the view (its size on screen
times the device pixel ratio, or its zoom) and the model (its input, or `max_input_side`), and
at full size while a recording needs it.

The viewer sets the plan on the GUI thread (each setting replaces one attribute whole); the
capture thread reads it once per frame it decodes, so a zoom or a resize applies from the next
frame on.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.sources.grabs import DecodeRequest, side_for_scale


@dataclass(frozen=True)
class ViewNeed:
    """What the view can show of a frame.

    viewport: its size in device pixels (widget size x device pixel ratio);
    zoom: device pixels per source pixel, or None while the picture is fitted to the viewport
    (the scale then follows each frame's own size)."""

    viewport: tuple[int, int]
    zoom: float | None = None

    def scale(self, size: tuple[int, int]) -> float:
        """Device pixels per source pixel for a frame of `size` (width, height)."""
        if self.zoom is not None:
            return self.zoom
        width, height = size
        return min(self.viewport[0] / max(width, 1), self.viewport[1] / max(height, 1))


class DecodePlan:
    """The decode size of a live stream's frames (see the module's docstring)."""

    def __init__(self, view: ViewNeed | None = None) -> None:
        self.view = view  # None: nothing shows the frames: the model's need alone
        self.full = False  # a recording: every frame at the source's size

    def request(self, size: tuple[int, int] | None, model_side: int | None) -> DecodeRequest:
        """For a frame of `size` (None: unknown until decoded) sent to a model needing
        `model_side` on its longest side (None: the whole picture)."""
        view = self.view
        display = view is not None
        if self.full or size is None or model_side is None:
            return DecodeRequest(None, display)
        need = model_side
        if view is not None:
            need = max(need, side_for_scale(size, view.scale(size)))
        return DecodeRequest(need if need < max(size) else None, display)
