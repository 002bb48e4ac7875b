"""GuiStages: the viewer's own stages of a traced request, timed on the GUI thread and added to
its trace (app.pipeline.xray): the hand-over to the GUI thread (from the moment the result's
callback posted it on the worker thread, `GuiBridge.posted_s`, to its slot running here) and,
for the live view, the paint (from the paint pass taking the newest result to the end of the
viewport's paint that put it on the screen).

For an untraced request each hook is one set lookup: tracing never slows the requests it
does not trace.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from app.inference.result import InferenceResult
from app.inference.tracing import spans as names
from app.pipeline.xray import XRay
from app.ui.base.bridge import GuiBridge


class GuiStages:
    def __init__(self, xray: XRay, bridge: GuiBridge, on_screen: Callable[[str], None] | None = None) -> None:
        """`on_screen(request_id)`: a traced live frame is on the screen (its paint recorded)."""
        self.xray = xray
        self.bridge = bridge
        self.on_screen = on_screen
        # The traced live frame drawn into the view and not on the screen yet: its request id
        # and when its paint pass began.
        self._painting: tuple[str, float] | None = None

    def arrived(self, result: InferenceResult) -> None:
        """A result's slot runs (GUI thread, inside the bridge's delivery)."""
        request_id, posted = result.request_id, self.bridge.posted_s
        if request_id is None or posted is None or not self.xray.is_traced(request_id):
            return
        self.xray.gui_stage(request_id, names.HANDOVER, posted, time.monotonic())

    def drawn(self, result: InferenceResult, started_s: float, on_screen: bool) -> None:
        """The live view took `result`'s frame (its paint pass began at `started_s`); the
        paint ends with the viewport's next paint, or now when the view is not on the screen."""
        request_id = result.request_id
        if request_id is None or not self.xray.is_traced(request_id):
            return
        if on_screen:
            self._painting = (request_id, started_s)  # a newer frame replaces one never shown
        else:
            self._record_paint(request_id, started_s)

    def viewport_painted(self) -> None:
        if self._painting is not None:
            request_id, started = self._painting
            self._painting = None
            self._record_paint(request_id, started)

    def _record_paint(self, request_id: str, started_s: float) -> None:
        self.xray.gui_stage(request_id, names.PAINT, started_s, time.monotonic())
        if self.on_screen is not None:
            self.on_screen(request_id)
