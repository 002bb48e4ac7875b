"""ViewerState: the viewer's truth without Qt; events only on real changes, in order."""

from __future__ import annotations

import pytest

from app.inference.result import InferenceResult, Status
from app.pipeline.live import LiveState
from app.sources.files import FileIdentity
from app.ui.state.events import Event
from app.ui.state.viewer_state import Mode, Scope, ViewerState


def _ok(key: str) -> InferenceResult:
    return InferenceResult("r-" + key, Status.OK, key)


def _record(state: ViewerState) -> list[tuple[str, object]]:
    seen: list[tuple[str, object]] = []
    for name in ("mode", "batch", "selection", "shown", "live", "scope"):
        event = getattr(state, f"{name}_changed")
        event.connect(lambda value, name=name: seen.append((name, value)))
    return seen


def test_setters_announce_changes_once_and_never_a_value_that_did_not_change() -> None:
    state = ViewerState()
    seen = _record(state)
    state.set_mode(Mode.BATCH)
    state.set_mode(Mode.BATCH)
    state.set_scope(Scope.LIVE)
    state.set_scope(Scope.LIVE)
    state.set_live(LiveState.PLAYING)
    state.set_live(LiveState.PLAYING)
    assert seen == [("mode", Mode.BATCH), ("scope", Scope.LIVE), ("live", LiveState.PLAYING)]
    assert (state.mode, state.scope, state.live) == (Mode.BATCH, Scope.LIVE, LiveState.PLAYING)


def test_a_batch_its_selection_and_the_picture_shown() -> None:
    state = ViewerState()
    seen = _record(state)
    state.add_entry("a.jpg", FileIdentity("a.jpg", 10, 1))
    state.add_entry("b.jpg")
    state.set_result(_ok("a.jpg"))
    state.set_result(InferenceResult(None, Status.SKIPPED, "notes.txt"))  # a result without an entry
    assert list(state.entries) == ["a.jpg", "b.jpg"] and set(state.results) == {"a.jpg", "notes.txt"}
    state.select("a.jpg")
    assert state.current_result() is state.results["a.jpg"] and state.shown_key is None
    state.set_shown("a.jpg")
    state.select("b.jpg")  # another entry: its picture is not drawn yet
    assert state.shown_key is None and state.current_result() is None
    assert seen[-3:] == [("shown", "a.jpg"), ("shown", None), ("selection", "b.jpg")]
    state.clear_batch()
    assert not state.has_entries() and not state.results and state.current_key is None
    assert seen[-2:] == [("selection", None), ("batch", None)]


def test_an_entry_opened_again_loses_its_old_result_and_picture_at_once() -> None:
    state = ViewerState()
    state.add_entry("a.jpg", FileIdentity("a.jpg", 10, 1))
    state.set_result(_ok("a.jpg"))
    state.select("a.jpg")
    state.set_shown("a.jpg")
    state.mark_stale("a.jpg")
    assert state.add_entry("a.jpg", FileIdentity("a.jpg", 12, 2)) is True
    assert "a.jpg" not in state.results and "a.jpg" not in state.stale and state.shown_key is None
    assert state.identity("a.jpg") == FileIdentity("a.jpg", 12, 2)
    assert state.add_entry("new.jpg") is False


def test_a_failing_subscriber_does_not_keep_the_others_from_hearing() -> None:
    event: Event[int] = Event()
    heard: list[int] = []

    def fail(_value: int) -> None:
        raise RuntimeError("subscriber bug")

    event.connect(fail)
    event.connect(heard.append)
    with pytest.raises(RuntimeError, match="subscriber bug"):
        event.emit(3)
    assert heard == [3]
    event.disconnect(fail)
    event.emit(4)
    assert heard == [3, 4]


def test_the_list_knows_its_jobs_and_names_each_entry_by_its_own_root() -> None:
    """An image opened on its own keeps its file name; one opened through a folder is named
    relative to that folder, and never re-rooted when another folder holding it is added."""
    state = ViewerState()
    state.add_job(1, ["/data/elsewhere/small.jpg"])
    state.add_entry("/data/elsewhere/small.jpg", job=1)
    state.add_job(2, ["/data/shoot"])
    state.add_entry("/data/shoot/sub/a.jpg", job=2)
    state.add_job(3, ["/data"])  # a folder holding both, added later: it names its own entries
    state.add_entry("/data/other.jpg", job=3)
    assert [state.name_of(k) for k in state.entries] == ["small.jpg", "sub/a.jpg", "other.jpg"]
    assert state.feeds(2) and not state.feeds(4)
    assert state.roots() == ["/data/elsewhere/small.jpg", "/data/shoot", "/data"]
    # Another model: the jobs retire (their late results no longer count), paths and names stay.
    state.set_result(_ok("/data/shoot/sub/a.jpg"))
    state.select("/data/shoot/sub/a.jpg")
    state.set_shown("/data/shoot/sub/a.jpg")
    state.retire_jobs()
    state.forget_results()
    assert not any(state.feeds(job) for job in (1, 2, 3)) and state.results == {}
    assert state.shown_key is None and state.current_key == "/data/shoot/sub/a.jpg"
    assert state.roots() == ["/data/elsewhere/small.jpg", "/data/shoot", "/data"]
    assert state.name_of("/data/shoot/sub/a.jpg") == "sub/a.jpg"
    # A new list: nothing of the old one.
    state.clear_batch()
    assert state.jobs == {} and state.names == {} and state.roots() == []
