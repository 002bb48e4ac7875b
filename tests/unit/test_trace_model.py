"""The Qt-free trace model: Triton's trace files read as written, the clock placement, the
matching of both sides, the spans, the Chrome and JSONL forms."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from app.inference.tracing import spans as names
from app.inference.tracing.chrome import trace_events, write_chrome_trace
from app.inference.tracing.clock import ClockPlacement
from app.inference.tracing.matching import NOT_TRACED, ClientRecord, TraceCollector
from app.inference.tracing.record import trace_record
from app.inference.tracing.server_trace import ServerTrace, traces_from_entries
from app.inference.tracing.spans import ClientStage, build_trace
from app.inference.tracing.trace_file import TraceFileReader
from tests.strict_json import strict_loads

MS = 1_000_000


def entries(
    trace_id: int, model: str, start: int, request_id: str = "", parent: int | None = None
) -> list[dict]:
    """One request's entries as Triton writes them: queue 1 ms, compute 2 + 10 + 1 ms."""
    head: dict = {"id": trace_id, "model_name": model, "model_version": 1}
    if parent is None:
        head["request_id"] = request_id
    else:
        head["parent_id"] = parent
    marks = [
        ("REQUEST_START", 0),
        ("QUEUE_START", 0),
        ("COMPUTE_START", 1),
        ("COMPUTE_INPUT_END", 3),
        ("COMPUTE_OUTPUT_START", 13),
        ("COMPUTE_END", 14),
        ("REQUEST_END", 14),
    ]
    return [head] + [{"id": trace_id, "timestamps": [{"name": n, "ns": start + t * MS}]} for n, t in marks]


def test_a_trace_file_list_nests_the_stage_requests_under_their_parent() -> None:
    listing = [
        *entries(3, "face_landmark", 108 * MS, parent=1),
        *entries(2, "face_detector", 104 * MS, parent=1),
        {"something": "a newer server's entry"},
        {"id": 1, "model_name": "face_mesh", "model_version": 1, "request_id": "r-1"},
        {"id": 1, "timestamps": [{"name": "REQUEST_START", "ns": 100 * MS}]},
        {"id": 1, "timestamps": [{"name": "COMPUTE_INPUT_END", "ns": 102 * MS}]},
        {"id": 1, "timestamps": [{"name": "COMPUTE_OUTPUT_START", "ns": 130 * MS}]},
        {"id": 1, "timestamps": [{"name": "REQUEST_START", "ns": 999 * MS}]},  # a repeat: the first counts
        {"id": 1, "timestamps": [{"name": "REQUEST_END", "ns": 131 * MS}]},
    ]
    (root,) = traces_from_entries(listing)
    assert (root.model, root.request_id, root.mark("REQUEST_START")) == ("face_mesh", "r-1", 100 * MS)
    assert [c.model for c in root.children] == ["face_detector", "face_landmark"]  # by start
    assert all(c.parent_id == "1" for c in root.children)


def write(path: Path, data: object) -> None:
    path.write_text(json.dumps(data))


def test_the_reader_reads_each_new_file_once_and_waits_for_one_being_written(tmp_path: Path) -> None:
    base = tmp_path / "trace.json"
    write(tmp_path / "trace.json.0", entries(1, "m", 0, "before-the-reader"))
    reader = TraceFileReader(base, consume=True, settle_s=2.0)
    assert reader.poll(now=0) == []  # what was there belongs to earlier requests
    write(tmp_path / "trace.json.1", entries(2, "m", 0, "a"))
    whole = json.dumps(entries(3, "m", 0, "b"))
    (tmp_path / "trace.json.2").write_text(whole[: len(whole) // 2])  # being written
    assert [t.request_id for t in reader.poll(now=1)] == ["a"]
    assert not (tmp_path / "trace.json.1").exists()  # consumed
    assert reader.waiting == 1 and reader.unreadable == 0
    (tmp_path / "trace.json.2").write_text(whole)
    assert [t.request_id for t in reader.poll(now=1.5)] == ["b"]
    assert reader.poll(now=2) == []
    # The memory of what was read is a watermark: nothing piles up.
    assert reader._done == set() and reader._watermark == 3
    assert (tmp_path / "trace.json.0").exists()


def test_the_reader_gives_up_a_file_that_stopped_growing_unparsed_and_skips_huge_ones(tmp_path: Path) -> None:
    base = tmp_path / "trace.json"
    reader = TraceFileReader(base, settle_s=2.0, max_file_bytes=10_000)
    (tmp_path / "trace.json.0").write_text('[{"id": 1, "model_na')
    write(tmp_path / "trace.json.1", [{"id": 9, "pad": "x" * 20_000}])
    write(tmp_path / "trace.json.2", entries(2, "m", 0, "after"))
    assert [t.request_id for t in reader.poll(now=0)] == ["after"]
    assert reader.unreadable == 1  # the huge one
    assert reader.poll(now=1) == []
    assert reader.poll(now=2.5) == [] and reader.unreadable == 2
    assert reader.waiting == 0 and reader._watermark == 3
    assert (tmp_path / "trace.json.2").exists()  # not consumed: not the reader's folder


def record(request_id: str, start: int, end: int, model: str = "m") -> ClientRecord:
    return ClientRecord(
        request_id, model, [ClientStage(names.IN_FLIGHT, start, end)], send_ns=start, reply_ns=end
    )


def server(request_id: str, start: int, offset: int = 0) -> ServerTrace:
    (trace,) = traces_from_entries(entries(7, "m", start + offset, request_id))
    return trace


def test_a_remote_clock_is_placed_from_the_round_trips_and_says_how_well() -> None:
    offset = -5_000 * MS  # the server's clock runs 5 s ahead of the client's
    placement = ClockPlacement(same_machine=False)
    collector = TraceCollector(placement)
    assert "not placed yet" in placement.describe()
    for i, (before, after) in enumerate([(3, 2), (1, 4), (2, 1)]):
        start = i * 100 * MS
        # The server's 14 ms lie `before` ms after the send and `after` ms before the reply.
        collector.add_client(record(f"r{i}", start, start + (before + 14 + after) * MS))
        collector.add_server([server(f"r{i}", start + before * MS, -offset)])
    found = collector.ready()
    assert [t.request_id for t in found] == ["r0", "r1", "r2"]
    # Each request bounds the offset to [true - before, true + after]; together they pin it
    # to [true - 1, true + 1] ms here (the least before and after): ±1 ms, more than any one.
    assert abs(placement.offset_ns - offset) <= placement.uncertainty_ns  # type: ignore[operator]
    assert placement.uncertainty_ns == 1 * MS
    assert "remote server" in found[0].clock and "±1.00 ms" in found[0].clock
    for trace in found:
        flight, srv = trace.first(names.IN_FLIGHT), trace.first(names.SERVER)
        assert flight and srv and flight.start_ns <= srv.start_ns and srv.end_ns <= flight.end_ns


def test_a_same_machine_server_off_the_clients_clock_turns_to_the_estimate() -> None:
    placement = ClockPlacement(same_machine=True)
    assert placement.offset_ns == 0 and placement.uncertainty_ns == 0
    placement.observe(0, 20 * MS, 3 * MS, 17 * MS)
    assert not placement.estimated
    placement.observe(100 * MS, 120 * MS, 900 * MS, 914 * MS)  # a VM's clock
    assert placement.estimated and "not this machine's clock" in placement.describe()
    assert placement.offset_ns == pytest.approx(-798 * MS, abs=3 * MS)


def test_the_collector_matches_either_order_gives_unmatched_ones_alone_and_stays_bounded() -> None:
    collector = TraceCollector(ClockPlacement(same_machine=True), wait_s=5, traced_wait_s=5, max_unclaimed=3)
    collector.add_server([server("early", 2 * MS)])
    collector.add_client(record("early", 0, 20 * MS))
    collector.add_client(record("alone", 0, 20 * MS))
    now = time.monotonic()
    (first,) = collector.ready(now=now)
    assert first.request_id == "early" and first.has_server()
    assert collector.ready(now=now + 1) == []
    later = collector.ready(now=now + 6)
    assert [t.request_id for t in later] == ["alone"] and later[0].notes == [NOT_TRACED]
    assert not later[0].has_server()
    # Traces of requests nobody waits for (other clients'): only the newest few are kept.
    collector.add_server([server(f"foreign-{i}", 0) for i in range(10)])
    assert list(collector._servers) == ["foreign-7", "foreign-8", "foreign-9"]


def test_the_spans_nest_by_time_and_the_server_ends_when_the_client_has_the_reply() -> None:
    (root,) = traces_from_entries(
        [*entries(2, "stage", 14 * MS, parent=1), *entries(1, "pipe", 10 * MS, "r")]
    )
    root.marks["COMPUTE_OUTPUT_START"] = 40 * MS
    root.marks["COMPUTE_END"] = root.marks["REQUEST_END"] = 41 * MS
    root.marks["GRPC_SEND_START"], root.marks["GRPC_SEND_END"] = 40 * MS, 46 * MS  # after the reply came
    stages = [
        ClientStage(names.PREPROCESS, 0, 5 * MS),
        ClientStage(names.IN_FLIGHT, 6 * MS, 45 * MS),
        ClientStage(names.SEND, 6 * MS, 7 * MS),
        ClientStage(names.DECODE, 45 * MS, 47 * MS),
    ]
    trace = build_trace("r", "pipe", stages, root, send_ns=6 * MS, reply_ns=45 * MS)
    spans = trace.spans
    assert spans[0].name == "request r" and (spans[0].start_ns, spans[0].end_ns) == (0, 47 * MS)
    by_name = {s.name: i for i, s in enumerate(spans)}
    assert spans[by_name[names.SEND]].parent == by_name[names.IN_FLIGHT]
    assert spans[by_name[names.SERVER]].parent == by_name[names.IN_FLIGHT]
    assert spans[by_name[names.SERVER]].end_ns == 45 * MS  # cut at the reply's arrival
    stage = spans[by_name["stage"]]
    infer = spans[stage.parent]  # type: ignore[index]
    assert (infer.name, infer.model) == (names.COMPUTE_INFER, "pipe")
    assert {s.model for s in spans if s.parent == by_name["stage"]} == {"stage"}
    for span in spans[1:]:
        parent = spans[span.parent]  # type: ignore[index]
        assert parent.start_ns <= span.start_ns <= span.end_ns <= parent.end_ns
    assert trace.first(names.NETWORK_OUT).duration_ms == 4.0  # type: ignore[union-attr]
    assert trace.facts["network_ms"] == 39 - 30  # in flight less the server's 10..40 ms

    record_ = trace_record(trace)
    assert record_["spans"][0] == {
        "name": "request r",
        "model": "pipe",
        "start_ms": 0.0,
        "end_ms": 47.0,
        "parent": None,
    }
    assert all(s["parent"] is None or 0 <= s["parent"] < len(spans) for s in record_["spans"])


def test_the_chrome_trace_is_strict_json_with_overlapping_requests_on_their_own_tracks(
    tmp_path: Path,
) -> None:
    traces = [
        build_trace(rid, "m", [ClientStage(names.IN_FLIGHT, start * MS, (start + 10) * MS)])
        for rid, start in [("a", 0), ("b", 5), ("c", 12), ("d", 30)]
    ]
    traces[0].notes.append("the server sent no trace")
    out = tmp_path / "trace.json"
    write_chrome_trace(out, traces)
    document = strict_loads(out.read_text())
    events = [e for e in document["traceEvents"] if e["ph"] == "X"]
    tops = {e["args"]["request_id"]: e for e in events if e["name"].startswith("request ")}
    # a and b overlap: two tracks; c starts after a ended: a's track again; so does d.
    assert {k: v["tid"] for k, v in tops.items()} == {"a": 1, "b": 2, "c": 1, "d": 1}
    assert tops["a"]["ts"] == 0 and tops["b"]["ts"] == 5000.0 and tops["a"]["dur"] == 10000.0
    assert tops["a"]["args"]["notes"] == ["the server sent no trace"]
    assert all({"request_id", "model"} <= set(e["args"]) for e in events)
    names_meta = [e for e in document["traceEvents"] if e["ph"] == "M"]
    assert {e["args"]["name"] for e in names_meta} >= {"requests 1", "requests 2"}
    assert trace_events([]) == {"traceEvents": [], "displayTimeUnit": "ms"}
    assert os.listdir(tmp_path) == ["trace.json"]  # written whole: no temporary left


def test_once_the_server_is_known_to_trace_a_late_trace_is_waited_for_longer() -> None:
    collector = TraceCollector(ClockPlacement(same_machine=True), wait_s=5, traced_wait_s=60)
    collector.add_client(record("first", 0, 20 * MS))
    now = time.monotonic()
    assert collector.patience_s == 5  # nothing known yet: the server may not trace at all
    collector.add_server([server("first", 2 * MS)])
    assert [t.request_id for t in collector.ready(now=now)] == ["first"]
    assert collector.patience_s == 60
    collector.add_client(record("late", 0, 20 * MS))
    assert collector.ready(now=now + 6) == []  # a loaded server's trace comes seconds late
    collector.add_server([server("late", 2 * MS)])
    (late,) = collector.ready(now=now + 7)
    assert late.request_id == "late" and late.has_server()
    collector.add_client(record("never", 0, 20 * MS))
    (alone,) = collector.ready(now=now + 61)
    assert alone.notes == [NOT_TRACED]
