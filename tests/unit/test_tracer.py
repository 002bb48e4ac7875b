"""Which requests are traced (all, the next N, the slowest N), the recorder, the batch's
members meeting one server trace, the GUI's late stages."""

from __future__ import annotations

import pytest

from app.inference.tracing import spans as names
from app.inference.tracing.otlp import TRACEPARENT
from app.inference.tracing.server_trace import traces_from_entries
from app.inference.tracing.tracer import SelectionError, SelectionKind, SlowestKept, Tracer, TraceSelection
from tests.unit.test_trace_model import MS, entries


def test_the_selection_is_parsed_and_a_bad_one_named() -> None:
    assert TraceSelection.parse("all").kind is SelectionKind.ALL
    assert (TraceSelection.parse(" 20 ").kind, TraceSelection.parse("20").count) == (SelectionKind.NEXT, 20)
    slowest = TraceSelection.parse("slowest:5")
    assert (slowest.kind, slowest.count) == (SelectionKind.SLOWEST, 5)
    for bad in ("0", "some", "slowest:", "slowest:-1", "-3"):
        with pytest.raises(SelectionError, match=rf"--trace '{bad}': expected all, a number"):
            TraceSelection.parse(bad)


def test_the_next_n_are_traced_then_none_until_armed_again() -> None:
    tracer = Tracer(TraceSelection.parse("2"), "m")
    got = [tracer.begin(f"r{i}") for i in range(4)]
    assert [g is not None for g in got] == [True, True, False, False]
    assert not tracer.selection.active
    tracer.arm(1)
    assert tracer.begin("r4") is not None and tracer.begin("r5") is None


def test_with_a_traceparent_each_traced_request_carries_its_own() -> None:
    tracer = Tracer(TraceSelection.parse("all"), "m", traceparent=True)
    a, b = tracer.begin("a"), tracer.begin("b")
    assert a is not None and b is not None and a.headers and b.headers
    assert a.headers[TRACEPARENT] != b.headers[TRACEPARENT] and a.trace_id in a.headers[TRACEPARENT]


class Source:
    def __init__(self) -> None:
        self.traces: list = []

    def poll(self) -> list:
        found, self.traces = self.traces, []
        return found


def finish(tracer: Tracer, request_id: str, start: float, end: float, server_id: str | None = None) -> None:
    recorder = tracer.begin(request_id)
    assert recorder is not None
    recorder.stage(names.IN_FLIGHT, start, end)
    tracer.finished(recorder, server_request_id=server_id, send_s=start, reply_s=end)


def test_a_client_batch_members_share_the_server_trace_and_the_gui_adds_its_stages() -> None:
    source = Source()
    tracer = Tracer(TraceSelection.parse("all"), "m", source=source)
    tracer.collector.settle_s = 60.0  # the GUI's stages come later: nothing is given out yet
    finish(tracer, "a", 0.0, 0.020, server_id="a,b")
    source.traces = traces_from_entries(entries(1, "m", 2 * MS, "a,b"))
    assert tracer.poll() == []
    finish(tracer, "b", 0.0, 0.020, server_id="a,b")  # after the trace came: still matched
    assert tracer.add_stage("b", names.PAINT, 0.021, 0.025)
    (a, b) = sorted(tracer.poll(flush=True), key=lambda t: t.request_id)
    assert a.has_server() and b.has_server()
    assert b.first(names.PAINT) is not None and a.first(names.PAINT) is None
    assert not tracer.add_stage("b", names.PAINT, 0.03, 0.04)  # given out already


def test_a_gui_stage_that_comes_before_the_record_is_kept_for_its_trace() -> None:
    # The GUI thread may run the result's slot (the hand-over) before the request path's
    # thread has handed the record to the tracer.
    tracer = Tracer(TraceSelection.parse("all"), "m")
    recorder = tracer.begin("a")
    assert recorder is not None
    recorder.stage(names.IN_FLIGHT, 0.0, 0.010)
    assert tracer.add_stage("a", names.HANDOVER, 0.011, 0.013)
    assert not tracer.add_stage("untraced", names.HANDOVER, 0.011, 0.013)
    tracer.finished(recorder, send_s=0.0, reply_s=0.010)
    (trace,) = tracer.poll(flush=True)
    handover = trace.first(names.HANDOVER)
    assert handover is not None and handover.duration_ms == pytest.approx(2.0)
    assert not tracer.add_stage("a", names.PAINT, 0.02, 0.03)  # given out already
    assert not tracer.is_traced("a")  # given out: its id is not kept (a long traced stream)


def test_slowest_traces_all_and_keeps_only_the_n_slowest() -> None:
    tracer = Tracer(TraceSelection.parse("slowest:2"), "m")
    tracer.collector.wait_s = 0.0
    keep = SlowestKept(tracer.selection.count)
    dropped = []
    for i, ms in enumerate([5, 50, 10, 40, 1]):
        finish(tracer, f"r{i}", i, i + ms / 1000)
        for trace in tracer.poll():
            dropped += [t.request_id for t in keep.offer(trace)]
    kept = keep.kept()
    assert [t.request_id for t in kept] == ["r1", "r3"]  # in time order
    assert [round(t.duration_ms) for t in kept] == [50, 40]
    assert sorted(dropped) == ["r0", "r2", "r4"]  # each given back as soon as it fell out
    assert SlowestKept(None).offer(kept[0]) == []


class Control:
    """The server's trace settings, as far as the tracer turns them on and back."""

    def __init__(self) -> None:
        self.restored = 0

    def enable(self, model: str) -> object:
        return object()

    def restore(self) -> None:
        self.restored += 1


def test_the_servers_tracing_stays_on_until_the_last_traced_request_has_ended() -> None:
    # The next 2: the first one's trace comes while the second is still on its way to the
    # server; turning the server's tracing off then would leave the second untraced.
    source, control = Source(), Control()
    tracer = Tracer(TraceSelection.parse("2"), "m", control=control, source=source)  # type: ignore[arg-type]
    first, second = tracer.begin("a"), tracer.begin("b")
    assert first is not None and second is not None and tracer.begin("c") is None
    first.stage(names.IN_FLIGHT, 0.0, 0.010)
    tracer.finished(first, send_s=0.0, reply_s=0.010)
    source.traces = traces_from_entries(entries(1, "m", 2 * MS, "a"))
    assert [t.request_id for t in tracer.poll()] == ["a"]
    assert control.restored == 0, "b is still to be traced by the server"
    assert tracer.in_flight == 1
    second.stage(names.IN_FLIGHT, 0.0, 0.010)
    tracer.finished(second, send_s=0.0, reply_s=0.010)
    source.traces = traces_from_entries(entries(1, "m", 2 * MS, "b"))
    (b,) = tracer.poll()
    assert b.request_id == "b" and b.has_server()
    assert control.restored == 1, "off once the last traced request's trace is in"


class RacingControl(Control):
    """Turning the server's tracing on takes a round trip, during which a live stream goes on
    sending: `enable` begins a request meanwhile, as a live frame would."""

    def __init__(self) -> None:
        super().__init__()
        self.tracer: Tracer | None = None
        self.begun_while_enabling: list[object] = []

    def enable(self, model: str) -> object:
        assert self.tracer is not None
        self.begun_while_enabling.append(self.tracer.begin("sent-while-enabling"))
        return object()


def test_a_request_sent_while_the_servers_tracing_is_turned_on_is_not_one_of_the_next_n() -> None:
    # The viewer's "Trace the next 5" on a live video: a frame sent before the server traces
    # would be one of the 5 with no server trace, and the 5th trace would never come.
    control = RacingControl()
    tracer = Tracer(TraceSelection(SelectionKind.NEXT, 0), "m", control=control, source=Source())  # type: ignore[arg-type]
    tracer._server_on = False  # as the viewer's tracer is before it is asked
    control.tracer = tracer
    tracer.arm(2)
    assert control.begun_while_enabling == [None], "not taken before the server traces"
    assert tracer.begin("a") is not None and tracer.begin("b") is not None
    assert tracer.begin("c") is None
    tracer.trace_every(False)
    tracer._server_on = False  # turned off since (the last traced request's trace came)
    tracer.trace_every(True)
    assert control.begun_while_enabling == [None, None]
    assert tracer.begin("d") is not None
