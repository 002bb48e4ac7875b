"""Which menu actions can do something now; a disabled one says why in its tooltip.
Refreshed on the next event-loop pass after anything relevant changed (coalesced: a batch of
hundreds of results costs one refresh)."""

from __future__ import annotations

from PySide6.QtGui import QAction
from superqt.utils import QSignalThrottler

from app.ui.batch.batch_browser import BatchBrowser
from app.ui.main_window import MainWindow
from app.ui.state.viewer_state import Mode, ViewerState

NO_BATCH = "Open images or a folder first (File > Open images…, or drop them on the window)"
LIVE_SHOWN = "The picture is live video: use Live > Record to keep it"


def set_enabled(action: QAction, why_not: str | None, tip: str = "") -> None:
    """Enable `action` when `why_not` is None, else disable it with the reason as its tooltip."""
    action.setEnabled(why_not is None)
    if why_not is not None:
        action.setToolTip(why_not)
    else:
        action.setToolTip(tip or action.text().replace("&", "").rstrip("…"))


class ActionStates:
    """Subscribes to the viewer's state (and the request log's rows); decides from the state,
    never from what a widget shows."""

    def __init__(self, state: ViewerState, window: MainWindow, browser: BatchBrowser) -> None:
        self.state, self.window, self.browser = state, window, browser
        # At 0 ms, trailing: one refresh on the next pass, however many changes came before it.
        self._refresh = QSignalThrottler(QSignalThrottler.EmissionPolicy.Trailing)
        self._refresh.setTimeout(0)
        self._refresh.triggered.connect(self.apply)
        for event in (state.batch_changed, state.selection_changed, state.shown_changed):
            event.connect(lambda _key: self.refresh())
        state.mode_changed.connect(lambda _mode: self.refresh())
        state.live_changed.connect(lambda _live: self.refresh())
        log = window.request_log.model
        log.rowsInserted.connect(self.refresh)
        log.modelReset.connect(self.refresh)
        self.refresh()  # the state as it starts

    def refresh(self, *_args: object) -> None:
        self._refresh.throttle()

    def apply(self) -> None:
        state, w, browser = self.state, self.window, self.browser
        live_shown = state.mode is Mode.LIVE
        has_entries = state.has_entries()
        has_results = bool(state.results)
        shown = None if has_entries else NO_BATCH
        if live_shown and shown is None:
            shown = LIVE_SHOWN
        set_enabled(w.export_png_action, shown or (None if state.shown_key is not None else "No image shown"))
        current = state.current_result()
        set_enabled(
            w.export_jsonl_action, shown or (None if current is not None else "No result for this image yet")
        )
        for action in w.export_all_actions.values():
            set_enabled(action, None if has_results else NO_BATCH)
        browse = (
            None if browser.visible() else (NO_BATCH if not has_entries else "The filter hides every image")
        )
        set_enabled(w.next_action, browse or (None if browser.can_step(1) else "This is the last image"))
        set_enabled(w.prev_action, browse or (None if browser.can_step(-1) else "This is the first image"))
        set_enabled(w.first_action, browse)
        set_enabled(w.last_action, browse)
        set_enabled(
            w.clear_action, None if has_entries or w.request_log.model.rowCount() else "Nothing to clear"
        )
        browser.update_info()
