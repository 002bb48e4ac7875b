"""`infer --trace`: the records of traced requests carry their spans, the Chrome trace opens
as strict JSON with the server's compute inside each request, the tensors file round-trips."""

from __future__ import annotations

import json
import re
from pathlib import Path

import cv2
import numpy as np
import pytest

from app.inference.tracing.perf_analyzer import read_input_data
from app.server.embedded import EmbeddedServer
from tests.integration.test_cli_infer import parse, run_cli
from tests.integration.test_traces_server import FORTY
from tests.strict_json import strict_loads


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("traced")
    rng = np.random.default_rng(11)
    for i in range(4):
        cv2.imwrite(str(out / f"img{i}.png"), rng.integers(0, 256, (40 + 8 * i, 48, 3), dtype=np.uint8))
    return out


def spans_named(record: dict, name: str) -> list[dict]:
    return [s for s in record["trace"]["spans"] if s["name"] == name]


def test_infer_trace_all_records_chrome_and_tensors(
    triton: EmbeddedServer, folder: Path, tmp_path: Path
) -> None:
    chrome, tensors = tmp_path / "trace.json", tmp_path / "tensors.json"
    done = run_cli(
        "infer",
        "--url",
        triton.grpc_url,
        "--model",
        FORTY,
        "--concurrency",
        "2",
        "--trace",
        "all",
        "--trace-output",
        str(chrome),
        "--trace-tensors",
        str(tensors),
        str(folder),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    records, summary = parse(done.stdout)
    assert summary["ok"] == 4 and len(records) == 4
    for record in records:
        trace = record["trace"]
        top = trace["spans"][0]
        assert (
            top["name"] == f"request {record['request_id']}"
            and top["start_ms"] == 0
            and top["parent"] is None
        )
        (infer,) = spans_named(record, "compute infer")
        assert infer["end_ms"] - infer["start_ms"] >= 40.0 and infer["model"] == FORTY
        assert 0 <= infer["start_ms"] <= infer["end_ms"] <= top["end_ms"]
        assert trace["clock"].startswith("same machine")
        # The image's reading is the request's first stage, then its pre-processing.
        (read,) = spans_named(record, "read")
        (prep,) = spans_named(record, "pre-process")
        assert read["start_ms"] == 0 and read["end_ms"] <= prep["start_ms"]
    # The Chrome trace: strict JSON, one top span per request with the server's inside.
    events = [e for e in strict_loads(chrome.read_text())["traceEvents"] if e["ph"] == "X"]
    tops = {e["args"]["request_id"]: e for e in events if e["name"].startswith("request ")}
    assert set(tops) == {r["request_id"] for r in records}
    for name in ("queue", "compute input", "compute infer", "compute output"):
        assert sum(e["name"] == name for e in events) == 4
    # The tensors: what was sent, one entry per image, with the replay command.
    back = read_input_data(json.loads(tensors.read_text()), {"image": "UINT8"})
    sent = sorted(cv2.imread(str(p))[:, :, ::-1].shape for p in folder.iterdir())
    assert sorted(e["image"].shape for e in back) == sent
    images = {p.name: np.ascontiguousarray(cv2.imread(str(p))[:, :, ::-1]) for p in folder.iterdir()}
    for entry in back:
        assert any(np.array_equal(entry["image"], image) for image in images.values())
    assert "perf_analyzer -m fixed_40ms" in done.stderr and f"--input-data {tensors}" in done.stderr
    assert "-b 1 --concurrency-range 2" in done.stderr
    assert "--trace: 4 traced request(s); the slowest:" in done.stderr


def test_infer_trace_slowest_keeps_the_slowest_and_writes_every_record(
    triton: EmbeddedServer, folder: Path
) -> None:
    done = run_cli("infer", "--url", triton.grpc_url, "--model", FORTY, "--trace", "slowest:2", str(folder))
    assert done.returncode == 0, done.stderr[-3000:]
    records, summary = parse(done.stdout)
    assert summary["ok"] == 4 and len(records) == 4
    traced = [r for r in records if "trace" in r]
    assert len(traced) == 2  # every request traced, the two slowest kept
    for record in traced:
        # The request's whole life: at least the latency the record reports.
        assert record["trace"]["spans"][0]["end_ms"] >= record["latency_ms"] - 0.5
    assert "--trace: 2 traced request(s); the slowest:" in done.stderr


def test_a_bad_trace_selection_is_named(folder: Path) -> None:
    done = run_cli("infer", "--trace", "fastest:3", str(folder))
    assert done.returncode == 2
    assert "--trace 'fastest:3': expected all, a number of requests" in done.stderr


def test_compare_trace_puts_each_sides_trace_in_its_part(
    triton: EmbeddedServer, folder: Path, tmp_path: Path
) -> None:
    chrome = tmp_path / "compare.json"
    done = run_cli(
        "compare",
        "--url",
        triton.grpc_url,
        "--model",
        FORTY,
        "--model",
        "fixed_cost",
        "--trace",
        "all",
        "--trace-output",
        str(chrome),
        str(folder),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    records, _ = parse(done.stdout)
    assert len(records) == 4
    for record in records:
        for side, model in (("a", FORTY), ("b", "fixed_cost")):
            spans = record[side]["trace"]["spans"]
            assert spans[0]["name"] == f"request {record[side]['request_id']}"
            assert {s["model"] for s in spans if s["name"] == "compute infer"} == {model}
    events = [e for e in strict_loads(chrome.read_text())["traceEvents"] if e["ph"] == "X"]
    assert sum(e["name"].startswith("request ") for e in events) == 8


def test_evaluate_trace_records_and_chrome(triton: EmbeddedServer, tmp_path: Path) -> None:
    from tests.evaluation_data import write_dataset
    from tests.integration.test_cli_evaluate import CLASSES, FIXED, records_of

    dataset, extra = write_dataset("coco", tmp_path / "data", FIXED, CLASSES)
    records, chrome = tmp_path / "records.jsonl", tmp_path / "trace.json"
    done = run_cli(
        "evaluate",
        "--url",
        triton.grpc_url,
        str(dataset),
        "--model",
        "fixed_versions",
        "--records",
        str(records),
        "--trace",
        "2",
        "--trace-output",
        str(chrome),
        "--output",
        str(tmp_path / "report.json"),
        *extra,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    written = records_of(records)
    assert len(written) == len(FIXED)  # every record written, the traced ones too
    traced = [r for r in written if "trace" in r]
    assert len(traced) == 2
    for record in traced:
        assert "compute infer" in {s["name"] for s in record["trace"]["spans"]}
    events = [e for e in strict_loads(chrome.read_text())["traceEvents"] if e["ph"] == "X"]
    assert {e["args"]["request_id"] for e in events} == {r["request_id"] for r in traced}


def test_bench_trace_slowest_writes_the_chrome_file_and_says_where_the_time_went(
    triton: EmbeddedServer, folder: Path, tmp_path: Path
) -> None:
    chrome = tmp_path / "bench.json"
    done = run_cli(
        "bench",
        "--url",
        triton.grpc_url,
        "--model",
        FORTY,
        "--concurrency",
        "1,2",
        "--requests",
        "6",
        "--warmup",
        "0",
        "--max-runs",
        "1",
        "--image",
        str(next(folder.iterdir())),
        "--trace",
        "slowest:3",
        "--trace-output",
        str(chrome),
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    events = [e for e in strict_loads(chrome.read_text())["traceEvents"] if e["ph"] == "X"]
    tops = [e for e in events if e["name"].startswith("request ")]
    assert len(tops) == 3
    assert sum(e["name"] == "compute infer" for e in events) == 3
    assert "--trace: 3 traced request(s); the slowest:" in done.stderr
    # At 2 in flight on one instance, the slowest waited behind another (for the slot, or in
    # the server's queue): said in words, with the figures.
    findings = [line for line in done.stderr.splitlines() if line.strip().startswith("->")]
    assert findings and any(
        re.search(r"queued [\d.]+ ms on the server|waited [\d.]+ ms for a free slot", f) for f in findings
    ), done.stderr
