"""What `--resume` keeps of an earlier run's records (app/commands/resume.py), and a record read
back as the result it was written from (app/inference/result_records.py)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np
import pytest

from app.commands.common import UsageError
from app.commands.resume import earlier_parts, find
from app.inference.masks import BinaryMask
from app.inference.result import ClassScore, Detection, ErrorKind, InferenceResult, Status
from app.inference.result_records import result_from_record


def record(source: str, status: str = "ok", frame: int | None = None, **more: object) -> str:
    return json.dumps({"source": source, "frame": frame, "status": status, **more}) + "\n"


def test_whole_records_of_ended_inputs_are_kept_once(tmp_path: Path) -> None:
    output = tmp_path / "out.jsonl"
    part = tmp_path / "out.jsonl.0123abcd.part"
    part.write_text(
        record("a.jpg")
        + record("b.jpg", "failed")
        + record("c.jpg", "cancelled")  # never answered: done again
        + record("a.jpg")  # a second record of one input: left out
        + record("v.mp4", frame=0)
        + record("v.mp4", frame=1, model="m")
        + record("v.mp4", frame=1, model="n")  # another model's record of the same frame (A/B)
        + '{"summary": {"total": 9}}\n'
        + record("d.jpg")[:-5]  # the kill cut the last line
    )
    resumed = find("--output", output)
    assert resumed.source == part and resumed.kept == 5 and resumed.dropped == 2
    assert resumed.done == {("a.jpg", None), ("b.jpg", None), ("v.mp4", 0), ("v.mp4", 1)}
    assert resumed.counts.ok == 4 and resumed.counts.failed == 1
    assert [r["source"] for r in resumed.records_of("n")] == ["v.mp4"]
    resumed.remove_source()
    assert not part.exists()


def test_the_newest_part_is_taken_then_the_file_itself_then_nothing(tmp_path: Path) -> None:
    output = tmp_path / "out.jsonl"
    assert find("--output", output).source is None
    output.write_text(record("done.jpg"))
    assert find("--output", output).source == output
    older, newer = tmp_path / "out.jsonl.aaaaaaaa.part", tmp_path / "out.jsonl.bbbbbbbb.part"
    older.write_text(record("x.jpg"))
    newer.write_text(record("y.jpg"))
    (tmp_path / "out.jsonl.not-ours.part").write_text(record("z.jpg"))
    now = time.time()
    os.utime(older, (now - 60, now - 60))
    assert earlier_parts(output) == [newer, older]
    resumed = find("--output", output)
    assert (
        resumed.source == newer
        and resumed.others == [older]
        and "older temporary files" in resumed.describe("")
    )
    with pytest.raises(UsageError, match="--resume needs --output FILE"):
        find("--output", None)


def test_a_record_reads_back_as_the_result_it_was_written_from() -> None:
    full = np.zeros((20, 30), bool)
    full[5:9, 10:20] = True
    result = InferenceResult(
        request_id="r-1",
        status=Status.OK,
        source="a.jpg",
        width=30,
        height=20,
        latency_ms=3.5,
        detections=[
            Detection(
                (1.5, 2.0, 10.0, 12.25), 0.875, 2, "car", ((3.0, 4.0, 0.5),), BinaryMask.from_full(full)
            )
        ],
        classes=[ClassScore(1, "dog", 0.5)],
    )
    back = result_from_record(json.loads(json.dumps(result.to_record())))
    assert back.to_record() == result.to_record()
    assert back.detections[0].mask is not None and np.array_equal(back.detections[0].mask.full(), full)
    failed = result_from_record(
        {"source": "b.jpg", "status": "timeout", "error": "slow", "error_kind": "timeout"}
    )
    assert failed.status is Status.TIMEOUT and failed.kind() is ErrorKind.TIMEOUT
    with pytest.raises(ValueError, match="not a record of one input"):
        result_from_record({"source": "c.jpg", "status": "ok", "detections": [{"box": [1, 2]}]})
