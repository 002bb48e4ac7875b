"""Triton's own traces, read from the embedded server as it writes them, matched to the
client's requests and placed on its clock (the real server, both protocols)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from app.inference.introspection.extensions import MISSING, Extension, ServerFeatures
from app.inference.protocol import parse_url
from app.inference.tracing import spans as names
from app.inference.tracing.chrome import trace_events
from app.inference.tracing.clock import ClockPlacement, ServerClock
from app.inference.tracing.matching import ClientRecord, TraceCollector
from app.inference.tracing.otlp import TRACEPARENT, OtlpReceiver, new_traceparent
from app.inference.tracing.settings import TraceControl
from app.inference.tracing.spans import ClientStage, RequestTrace
from app.inference.tracing.trace_file import TraceFileReader
from app.inference.tracing.tracer import Tracer, TraceSelection
from app.inference.transports.channel import Channel, ConnectionOptions
from app.inference.transports.open_channel import open_channel
from app.inference.transports.wire import Wire
from app.resources import sample_image
from app.server.embedded import EmbeddedServer
from app.server.trace_setup import TraceMode, TraceSetup
from tests.mlserver.server import MLServer
from tests.strict_json import strict_loads

FORTY = "fixed_40ms"


@pytest.fixture(params=["grpc", "http"])
def channel(request: pytest.FixtureRequest, triton: EmbeddedServer) -> Iterator[Channel]:
    url = triton.grpc_url if request.param == "grpc" else f"http://{triton.http_url}"
    opened = open_channel(parse_url(url), ConnectionOptions())
    yield opened
    opened.close()


def send_timed(
    channel: Channel, model: str, image: np.ndarray, request_id: str, headers: dict[str, str] | None = None
) -> ClientRecord:
    """One request through the app's channel, its client window timed (monotonic ns)."""
    wire = Wire(channel.protocol)
    inputs = [wire.input("image", image[None], "UINT8")]
    outputs = [wire.output("num_dets")]
    done = threading.Event()
    outcome: dict[str, Any] = {}

    def on_done(result: Any = None, error: Exception | None = None) -> None:
        outcome["reply_ns"], outcome["error"] = time.monotonic_ns(), error
        done.set()

    start = time.monotonic_ns()
    channel.send(
        model_name=model,
        inputs=inputs,
        outputs=outputs,
        request_id=request_id,
        client_timeout=30.0,
        headers=headers,
        on_done=on_done,
    )
    assert done.wait(30)
    assert outcome["error"] is None, outcome["error"]
    return ClientRecord(
        request_id,
        model,
        [ClientStage(names.IN_FLIGHT, start, outcome["reply_ns"])],
        send_ns=start,
        reply_ns=outcome["reply_ns"],
    )


# A busy machine (the suite runs on every core) can hold the server's trace back for
# seconds, OpenTelemetry's batches most: these tests wait for it rather than accept the
# client-only trace the app gives after its usual 5 s.
SERVER_WAIT_S = 20.0


def collect(
    reader: TraceFileReader | OtlpReceiver,
    collector: TraceCollector,
    wanted: int,
    timeout_s: float = SERVER_WAIT_S + 5,
) -> list[RequestTrace]:
    found: list[RequestTrace] = []
    deadline = time.monotonic() + timeout_s
    while len(found) < wanted and time.monotonic() < deadline:
        collector.add_server(reader.poll())
        found += collector.ready()
        time.sleep(0.05)
    return found


def traced(triton: EmbeddedServer, channel: Channel, model: str) -> tuple[TraceControl, TraceFileReader]:
    control = TraceControl(channel, {}, ServerFeatures())
    settings = control.enable(model)
    assert settings is not None and settings.on and settings.log_frequency == 1
    assert triton.trace_file is not None and settings.trace_file == str(triton.trace_file)
    return control, TraceFileReader(Path(settings.trace_file))


def test_a_40_ms_model_shows_its_compute_inside_the_request(triton: EmbeddedServer, channel: Channel) -> None:
    control, reader = traced(triton, channel, FORTY)
    collector = TraceCollector(ClockPlacement(same_machine=True), wait_s=SERVER_WAIT_S)
    image = np.zeros((48, 64, 3), np.uint8)
    try:
        ids = [f"x-ray-{channel.protocol.value}-{i}" for i in range(3)]
        for request_id in ids:
            collector.add_client(send_timed(channel, FORTY, image, request_id))
        found = collect(reader, collector, len(ids))
    finally:
        control.restore()
    assert sorted(t.request_id for t in found) == sorted(ids)
    for trace in found:
        assert trace.has_server(), trace.notes
        assert trace.top.name == f"request {trace.request_id}"
        infer = trace.first(names.COMPUTE_INFER)
        queue = trace.first(names.QUEUE)
        assert infer is not None and queue is not None
        # The model sleeps 40 ms in execute(): the server's own marks say so.
        assert infer.duration_ms >= 40.0
        assert infer.model == FORTY
        # On one steady clock, the server's part lies inside the client's.
        flight = trace.first(names.IN_FLIGHT)
        assert flight is not None
        server = trace.first(names.SERVER)
        assert server is not None and flight.start_ns <= server.start_ns <= server.end_ns <= flight.end_ns
        assert 0 <= trace.facts["network_ms"] < flight.duration_ms
        compute = sum(
            s.duration_ms
            for s in trace.spans
            if s.name in (names.COMPUTE_INPUT, names.COMPUTE_INFER, names.COMPUTE_OUTPUT)
        )
        assert queue.duration_ms + compute <= flight.duration_ms
        assert trace.clock.startswith("same machine")
        if channel.protocol.value == "http":
            assert trace.first(names.RECEIVE) is not None
    # The settings were put back: the model inherits the server's (off) again.
    after = control.settings(FORTY)
    assert after is not None and not after.on and after.log_frequency == 0
    # The Chrome trace of them is strict JSON, every span inside its request's on its track.
    document = strict_loads(json.dumps(trace_events(found)))
    events = [e for e in document["traceEvents"] if e["ph"] == "X"]
    tops = {e["args"]["request_id"]: e for e in events if e["name"].startswith("request ")}
    assert set(tops) == set(ids)
    for event in events:
        top = tops[event["args"]["request_id"]]
        assert event["tid"] == top["tid"]
        assert top["ts"] <= event["ts"] and event["ts"] + event["dur"] <= top["ts"] + top["dur"] + 0.001


def test_face_mesh_shows_its_stages_nested_in_its_compute(triton: EmbeddedServer) -> None:
    channel = open_channel(parse_url(triton.grpc_url), ConnectionOptions())
    control, reader = traced(triton, channel, "face_mesh")
    collector = TraceCollector(ClockPlacement(same_machine=True), wait_s=SERVER_WAIT_S)
    import cv2

    image = np.ascontiguousarray(cv2.imread(str(sample_image()))[:, :, ::-1])
    try:
        collector.add_client(send_timed(channel, "face_mesh", image, "mesh-1"))
        (trace,) = collect(reader, collector, 1, timeout_s=60)
    finally:
        control.restore()
        channel.close()
    infer_index = next(
        i for i, s in enumerate(trace.spans) if s.name == names.COMPUTE_INFER and s.model == "face_mesh"
    )
    infer = trace.spans[infer_index]
    stages = [s for s in trace.spans if s.parent == infer_index]
    assert [s.name for s in stages][:1] == ["face_detector"]
    assert "face_landmark" in [s.name for s in stages]
    for stage in stages:
        assert stage.model == stage.name
        assert infer.start_ns <= stage.start_ns <= stage.end_ns <= infer.end_ns
        # Each stage has its own compute, carrying the stage model's name.
        own = [s for s in trace.spans if s.parent == trace.spans.index(stage)]
        assert names.COMPUTE_INFER in [s.name for s in own]
        assert {s.model for s in own} == {stage.name}


def test_opentelemetry_mode_traces_just_the_requests_sent_with_a_traceparent(tmp_path: Path) -> None:
    repo = tmp_path / "repository"
    repo.mkdir()
    (repo / FORTY).symlink_to(Path(__file__).parents[1] / "models" / FORTY, target_is_directory=True)
    with OtlpReceiver() as receiver:
        setup = TraceSetup(TraceMode.OPENTELEMETRY, receiver.url)
        with EmbeddedServer(repo, tracing=setup) as server:
            assert server.trace_file is None
            channel = open_channel(parse_url(server.grpc_url), ConnectionOptions())
            settings = TraceControl(channel, {}, ServerFeatures()).settings()
            assert settings is not None and settings.opentelemetry and settings.collector_url == receiver.url
            collector = TraceCollector(
                ClockPlacement(same_machine=True, server_clock=ServerClock.WALL), wait_s=SERVER_WAIT_S
            )
            image = np.zeros((48, 64, 3), np.uint8)
            header, trace_id = new_traceparent()
            try:
                send_timed(channel, FORTY, image, "untraced-1")
                collector.add_client(send_timed(channel, FORTY, image, "traced-1", {TRACEPARENT: header}))
                send_timed(channel, FORTY, image, "untraced-2")
                (trace,) = collect(receiver, collector, 1)
            finally:
                channel.close()
            time.sleep(0.5)  # the server posts every 200 ms: nothing else comes
            assert receiver.poll() == []
    assert trace.request_id == "traced-1" and trace.trace_id == trace_id and trace.has_server()
    infer, flight = trace.first(names.COMPUTE_INFER), trace.first(names.IN_FLIGHT)
    assert infer is not None and flight is not None and infer.duration_ms >= 40.0
    # Wall-clock marks moved onto the steady clock: inside the client's window.
    assert flight.start_ns <= infer.start_ns <= infer.end_ns <= flight.end_ns
    assert "wall-clock" in trace.clock


@pytest.mark.parametrize("protocol", ["grpc", "http"])
def test_a_server_without_the_trace_extension_is_named_in_one_sentence(
    mlserver: MLServer, protocol: str
) -> None:
    url = mlserver.grpc_url if protocol == "grpc" else mlserver.http_url
    channel = open_channel(parse_url(url), ConnectionOptions())
    features = ServerFeatures()
    control = TraceControl(channel, {}, features)
    try:
        assert control.settings() is None
        assert control.enable("boxes_nms") is None
        control.restore()
    finally:
        channel.close()
    assert features.missing == [Extension.TRACE]
    assert control.missing_note == MISSING[Extension.TRACE]
    tracer = Tracer.start(TraceSelection.parse("all"), "boxes_nms", control, same_machine=True)
    assert tracer.source is None
    assert tracer.notes == [f"{MISSING[Extension.TRACE]}: the client's stages only"]
    assert features.notes() == ["request tracing not available from this server (Triton's trace extension)"]


def test_the_tracer_reads_the_embedded_servers_own_files_and_says_when_it_cannot(
    triton: EmbeddedServer,
) -> None:
    channel = open_channel(parse_url(triton.grpc_url), ConnectionOptions())
    try:
        far = Tracer.start(
            TraceSelection.parse("1"), FORTY, TraceControl(channel, {}, ServerFeatures()), same_machine=False
        )
        assert far.source is None and "on its own machine, which this app cannot read" in far.notes[0]
        control = TraceControl(channel, {}, ServerFeatures())
        tracer = Tracer.start(TraceSelection.parse("1"), FORTY, control, same_machine=True)
        reader = getattr(tracer.source, "source", None)
        assert isinstance(reader, TraceFileReader) and reader.consume
        settings = control.settings(FORTY)
        assert settings is not None and settings.on  # on for the one request to trace
        recorder = tracer.begin("tracer-1")
        assert recorder is not None and tracer.begin("tracer-2") is None
        record = send_timed(channel, FORTY, np.zeros((8, 8, 3), np.uint8), "tracer-1")
        recorder.stages[:] = record.stages
        tracer.finished(recorder, send_s=record.send_ns / 1e9, reply_s=record.reply_ns / 1e9)  # type: ignore[operator]
        deadline, found = time.monotonic() + 20, []
        while not found and time.monotonic() < deadline:
            found = tracer.poll()
            time.sleep(0.05)
        assert [t.request_id for t in found] == ["tracer-1"] and found[0].has_server()
        # The one request traced: the server's tracing goes off again by itself.
        after = control.settings(FORTY)
        assert after is not None and not after.on
        tracer.close()
    finally:
        channel.close()
