"""`ViewerState`: the one place the viewer's truth lives (see the package's docstring).

Every setter emits its event only when the value changes, so a widget that mirrors the state
and writes it back on its own change signal cannot start a loop.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from pathlib import Path

from app.inference.result import InferenceResult
from app.pipeline.exports.images import relative_name
from app.pipeline.live import LiveState
from app.sources.files import FileIdentity
from app.ui.state.events import Event


class Mode(enum.StrEnum):
    """What the middle of the window shows."""

    EMPTY = "empty"  # nothing opened yet: the call to action
    BATCH = "batch"  # browsing opened images
    LIVE = "live"  # a camera, video or stream plays


class Scope(enum.StrEnum):
    """Which results the statistics count."""

    BATCH = "batch"
    LIVE = "live"
    SESSION = "session"


RETIRED = -1  # the job id of paths opened into the list by jobs that no longer feed it


class ViewerState:
    def __init__(self) -> None:
        self.mode = Mode.EMPTY
        # The batch: its entries in the order they came (with the version of the file each
        # one's result is for, when known), the results by key (also of inputs that have no
        # entry: a folder's entries that are not media), and the keys whose file changed on
        # disk since (their boxes are not drawn on the picture read now).
        self.entries: dict[str, FileIdentity | None] = {}
        self.results: dict[str, InferenceResult] = {}
        self.stale: set[str] = set()
        # How the batch is looked through: only some of its entries (e.g. the images of a
        # confusion matrix's cell; None: all) and in which order (e.g. most errors first;
        # None: as they came). The search and filter of the batch bar apply on top.
        self.only: frozenset[str] | None = None
        self.only_reason = ""
        self.order: tuple[str, ...] | None = None
        # How the batch was opened: the jobs feeding it (a job's results belong to the list
        # only while it is one of them) with the paths each opened, and each entry's name
        # relative to the path of its own job that holds it (never re-rooted later).
        self.jobs: dict[int, tuple[str, ...]] = {}
        self.names: dict[str, str] = {}
        self.model: str | None = None  # the model the results are of
        self.current_key: str | None = None  # the entry selected
        self.shown_key: str | None = None  # ... whose picture is drawn (None: not yet, or none)
        self.live = LiveState.IDLE
        self.scope = Scope.SESSION  # shown in the statistics panel and its chart
        self.mode_changed: Event[Mode] = Event()
        self.batch_changed: Event[str | None] = Event()  # the entry or result's key (None: all)
        self.selection_changed: Event[str | None] = Event()
        self.browsing_changed: Event[None] = Event()  # `only` or `order`
        self.shown_changed: Event[str | None] = Event()
        self.live_changed: Event[LiveState] = Event()
        self.scope_changed: Event[Scope] = Event()

    # -- the batch -------------------------------------------------------------------------
    def add_job(self, job: int, paths: Sequence[str]) -> None:
        """A job feeds the batch with what `paths` hold (files and folders opened)."""
        self.jobs[job] = tuple(str(p) for p in paths)

    def retire_jobs(self) -> None:
        """The jobs so far no longer feed the list (another model runs it again); its paths,
        entries and names stay (the paths under job id -1, which no job has)."""
        self.jobs = {RETIRED: tuple(self.roots())} if self.jobs else {}

    def feeds(self, job: int) -> bool:
        """Whether `job`'s entries and results belong to the batch shown (not to a list that
        was cleared or replaced since)."""
        return job in self.jobs

    def roots(self) -> list[str]:
        """Every path opened into the batch, in order, once each."""
        return list(dict.fromkeys(p for paths in self.jobs.values() for p in paths))

    def name_of(self, key: str) -> str:
        """The entry's name relative to the folder it was opened through (`sub/photo.jpg`), or
        its file name when it was opened on its own."""
        name = self.names.get(key)
        if name is not None:
            return name
        roots = self.roots()
        return relative_name(key, roots) if roots else Path(key).name

    def add_entry(self, key: str, identity: FileIdentity | None = None, job: int | None = None) -> bool:
        """An input was read (its result follows), by `job` when known (it names the entry).
        True when it was there before (opened again): its old result is dropped at once,
        never shown with the new picture."""
        renewed = key in self.results or self.entries.get(key) is not None
        self.results.pop(key, None)
        self.stale.discard(key)
        self.entries[key] = identity
        paths = self.jobs.get(job) if job is not None else None
        if paths is not None:
            self.names[key] = relative_name(key, paths)
        if renewed and key == self.shown_key:
            self.set_shown(None)
        self.batch_changed.emit(key)
        return renewed

    def identity(self, key: str) -> FileIdentity | None:
        return self.entries.get(key)

    def set_result(self, result: InferenceResult) -> None:
        if result.source is None:
            return
        self.results[result.source] = result
        self.batch_changed.emit(result.source)

    def mark_stale(self, key: str) -> None:
        self.stale.add(key)
        self.batch_changed.emit(key)

    def clear_batch(self) -> None:
        """An empty list: no entries, results, jobs or names (a new batch starts here)."""
        self.entries.clear()
        self.results.clear()
        self.stale.clear()
        self.jobs.clear()
        self.names.clear()
        self.select(None)
        self.narrow(None)
        self.set_order(None)
        self.batch_changed.emit(None)

    def forget_results(self) -> None:
        """The results no longer apply (another model): the entries stay, their results go."""
        self.results.clear()
        self.stale.clear()
        if self.shown_key is not None:
            self.set_shown(None)  # the picture is drawn again without the old model's boxes
        self.batch_changed.emit(None)

    def has_entries(self) -> bool:
        return bool(self.entries)

    def current_result(self) -> InferenceResult | None:
        return None if self.current_key is None else self.results.get(self.current_key)

    def narrow(self, keys: frozenset[str] | set[str] | None, reason: str = "") -> None:
        """Show only the entries `keys` (None: all), and say why (e.g. "face seen as car")."""
        only = None if keys is None else frozenset(keys)
        if only == self.only and reason == self.only_reason:
            return
        self.only, self.only_reason = only, reason if only is not None else ""
        self.browsing_changed.emit(None)

    def set_order(self, keys: list[str] | tuple[str, ...] | None) -> None:
        """Look through the entries in this order (entries not named follow as they came);
        None: as they came."""
        order = None if keys is None else tuple(keys)
        if order != self.order:
            self.order = order
            self.browsing_changed.emit(None)

    def ordered_keys(self) -> list[str]:
        """Every entry, in the order the batch is looked through."""
        if self.order is None:
            return list(self.entries)
        rank = {key: i for i, key in enumerate(self.order)}
        return sorted(self.entries, key=lambda key: rank.get(key, len(rank)))  # stable

    # -- selection -------------------------------------------------------------------------------
    def select(self, key: str | None) -> None:
        if key == self.current_key:
            return
        self.current_key = key
        if self.shown_key != key:
            self.set_shown(None)
        self.selection_changed.emit(key)

    def set_shown(self, key: str | None) -> None:
        """The picture of `key` (the current entry) is drawn; None: no picture of the batch."""
        if key == self.shown_key:
            return
        self.shown_key = key
        self.shown_changed.emit(key)

    # -- the window, the stream, the statistics --------------------------------------------------
    def set_mode(self, mode: Mode) -> None:
        if mode is not self.mode:
            self.mode = mode
            self.mode_changed.emit(mode)

    def set_live(self, state: LiveState) -> None:
        if state is not self.live:
            self.live = state
            self.live_changed.emit(state)

    def set_scope(self, scope: Scope) -> None:
        if scope is not self.scope:
            self.scope = scope
            self.scope_changed.emit(scope)
