"""Every command against the embedded Triton over HTTP (`--url http://...`) gives what it gives
over gRPC: the same records (infer, compare, evaluate), the same models, index and config,
a bench and a tune that run without a failure. Real processes, real server."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest
import skimage.data

from app.inference.introspection.repository import RepositoryControl
from app.inference.protocol import parse_url
from app.server.embedded import EmbeddedServer
from tests.cli_runner import run_cli_in_process
from tests.evaluation_data import Img, Obj, write_dataset
from tests.integration.test_cli_infer import parse

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
VARYING = ("request_id", "latency_ms")  # differ from run to run by nature


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli_in_process(*args)


def both(triton: EmbeddedServer, *args: str, code: int = 0) -> tuple[subprocess.CompletedProcess[str], ...]:
    """The command over gRPC, then over HTTP (the `URL` placeholder in `args` is the server)."""
    runs = []
    for url in (triton.grpc_url, f"http://{triton.http_url}"):
        done = run_cli(*(url if a == "URL" else a for a in args))
        assert done.returncode == code, (url, done.stderr[-3000:])
        runs.append(done)
    return tuple(runs)


def comparable(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(
        ({k: v for k, v in r.items() if k not in VARYING} for r in records),
        key=lambda r: (r["source"], r["frame"] if r["frame"] is not None else -1),
    )


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("inputs")
    for name, image in (("astronaut.png", skimage.data.astronaut()), ("coffee.jpg", skimage.data.coffee())):
        cv2.imwrite(str(folder / name), cv2.cvtColor(image, cv2.COLOR_RGB2BGR))
    cv2.imwrite(str(folder / "gray.png"), skimage.data.camera())
    (folder / "broken.jpg").write_bytes(b"\xff\xd8\xff" + b"\x00" * 64)
    (folder / "notes.txt").write_text("not media")
    video = cv2.VideoWriter(str(folder / "clip.avi"), cv2.VideoWriter_fourcc(*"MJPG"), 10, (160, 120))
    for i in range(4):
        video.write(np.full((120, 160, 3), 40 * i, np.uint8))
    video.release()
    return folder


@pytest.mark.parametrize(
    "options",
    [
        ("--model", "face_detector"),
        ("--model", "fixed_efficientnms", "--transport", "shm"),
        ("--model", "fixed_yolov8", "--client-batch", "4", "--transport", "grpc"),
        ("--model", "fixed_tfod"),
    ],
    ids=["face_detector", "efficientnms-shm", "yolov8-client-batch", "tfod"],
)
def test_infer_writes_the_same_records(
    triton: EmbeddedServer, inputs: Path, options: tuple[str, ...]
) -> None:
    grpc, http = both(triton, "infer", "--url", "URL", *options, str(inputs), code=1)  # broken.jpg
    (grpc_records, grpc_summary), (http_records, http_summary) = parse(grpc.stdout), parse(http.stdout)
    assert comparable(http_records) == comparable(grpc_records)
    assert len(http_records) == 9  # 3 images, 4 frames, one broken, one skipped
    assert sum(len(r["detections"]) for r in http_records) > 0
    counts = ("total", "ok", "failed", "skipped", "transport")
    assert {k: http_summary[k] for k in counts} == {k: grpc_summary[k] for k in counts}
    assert (grpc_summary["protocol"], http_summary["protocol"]) == ("grpc", "http")
    # Triton's statistics over HTTP too: the server's split of the time is there.
    assert http_summary["timing"]["server_compute_infer_ms"] > 0
    assert "note:" not in http.stderr  # Triton has every extension the app uses


def test_compare_writes_the_same_records(triton: EmbeddedServer, inputs: Path) -> None:
    args = ("compare", "--url", "URL", "--model", "fixed_versions", "--version-a", "1", "--version-b", "2")
    grpc, http = both(triton, *args, str(inputs / "astronaut.png"), str(inputs / "coffee.jpg"))
    (grpc_records, grpc_summary), (http_records, http_summary) = parse(grpc.stdout), parse(http.stdout)

    def strip(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return sorted(
            ({**r, "a": comparable([r["a"]])[0], "b": comparable([r["b"]])[0]} for r in records),
            key=lambda r: r["source"],
        )

    assert strip(http_records) == strip(grpc_records)
    assert http_records[0]["matched"] and http_records[0]["only_a"] == [1, 2]
    assert http_summary["agreement"] == grpc_summary["agreement"]


def test_models_describes_the_same_models(triton: EmbeddedServer) -> None:
    grpc, http = both(triton, "models", "--url", "URL", "--model", "fixed_yolov8")
    grpc_lines, http_lines = grpc.stdout.splitlines(), http.stdout.splitlines()
    assert grpc_lines[0].endswith("over gRPC: 1 model(s)") and http_lines[0].endswith("over HTTP: 1 model(s)")
    assert http_lines[1:] == grpc_lines[1:]
    assert "output: yolov8 (output0)" in http.stdout


def test_evaluate_gives_the_same_metrics(triton: EmbeddedServer, tmp_path: Path) -> None:
    images = [
        Img("a.png", 480, 640, [Obj("face", (100, 150, 300, 350)), Obj("car", (300, 300, 500, 500))]),
        Img("b.png", 600, 800, [Obj("face", (50, 60, 250, 260))]),
    ]
    dataset, extra = write_dataset("coco", tmp_path / "data", images, ["face", "hand", "car"])
    reports = []
    for url in (triton.grpc_url, f"http://{triton.http_url}"):
        out = tmp_path / f"report-{len(reports)}.json"
        args = ("evaluate", "--url", url, str(dataset), "--model", "fixed_versions", "--output", str(out))
        done = run_cli(*args, *extra)
        assert done.returncode == 0, done.stderr[-3000:]
        reports.append(json.loads(out.read_text()))
    grpc_report, http_report = reports
    assert http_report["metrics"] == grpc_report["metrics"]
    assert http_report["per_class"] == grpc_report["per_class"]
    assert http_report["metrics"]["map50"] is not None


def test_repository_list_and_config_are_the_same(triton: EmbeddedServer) -> None:
    grpc, http = both(triton, "repository", "--url", "URL", "list")
    assert http.stdout == grpc.stdout and "fixed_cost" in http.stdout
    grpc, http = both(triton, "repository", "--url", "URL", "config", "fixed_cost")
    assert http.stdout == grpc.stdout and "max_batch_size: 16" in http.stdout


# --compare-plain runs plain tritonclient.http.aio as users write it, which hands aiohttp the raw
# bytes of a large body (the app's own channel does not: http_channel.py), and aiohttp warns.
@pytest.mark.filterwarnings("ignore:Sending a large body directly:ResourceWarning")
def test_bench_runs_over_http_like_grpc(triton: EmbeddedServer, tmp_path: Path) -> None:
    outs = [tmp_path / "grpc.json", tmp_path / "http.json"]
    for url, out in zip((triton.grpc_url, f"http://{triton.http_url}"), outs, strict=True):
        done = run_cli(
            *("bench", "--url", url, "--model", "fixed_efficientnms", "--requests", "12", "--warmup", "2"),
            *("--concurrency", "1,2", "--transport", "grpc,shm", "--compare-plain", "--output", str(out)),
        )
        assert done.returncode == 0, done.stderr[-3000:]
    grpc_levels, http_levels = (json.loads(out.read_text())["levels"] for out in outs)
    key = [(e["transport"], e["client_batch"], e["concurrency"]) for e in grpc_levels]
    assert [(e["transport"], e["client_batch"], e["concurrency"]) for e in http_levels] == key
    for e in http_levels:
        assert e["failed"] == 0 and e["throughput"] > 0 and e["plain_failed"] == 0
        assert e["server_compute_ms"] > 0  # Triton's statistics over HTTP


def test_tune_over_http_restores_the_original(triton: EmbeddedServer, tmp_path: Path) -> None:
    with RepositoryControl(parse_url(f"http://{triton.http_url}")) as repository:
        original = repository.config("fixed_cost")
        image = tmp_path / "frame.png"
        cv2.imwrite(str(image), np.full((48, 64, 3), 90, np.uint8))
        out = tmp_path / "tune.json"
        done = run_cli(
            *("tune", "--url", f"http://{triton.http_url}", "--model", "fixed_cost", "--image", str(image)),
            *("--instances", "1", "--max-batch", "16", "--queue-delay-us", "off,2000"),
            *("--concurrency", "4", "--requests", "16", "--output", str(out)),
        )
        assert done.returncode == 0, done.stderr[-3000:]
        assert repository.config("fixed_cost") == original
    report = json.loads(out.read_text())
    assert len(report["trials"]) == 2 and report["recommendation"] is not None
    assert all(level["failed"] == 0 for trial in report["trials"] for level in trial["levels"])
