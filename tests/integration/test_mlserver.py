"""A KServe v2 server that is not Triton: MLServer 1.7 (tests/mlserver/), over gRPC and HTTP.
It has no model configuration, statistics or shared memory (UNIMPLEMENTED over gRPC, 404
over HTTP), no binary tensors over HTTP, and its repository index says `State.READY`: every
command still works, with the boxes its models answer, and says once what the server lacks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

from app.inference.core.session import TritonSession
from app.inference.core.spec import Delivery, SessionSpec
from app.inference.errors import ExtensionMissingError, SessionError
from app.inference.introspection.discovery import check_live, list_models
from app.inference.introspection.extensions import MISSING, Extension
from app.inference.introspection.repository import RepositoryControl, RepositoryError, RepositoryErrorKind
from app.inference.protocol import parse_endpoints, parse_url
from app.inference.result import ErrorKind
from app.inference.transports.channel import ConnectionOptions
from app.inference.transports.open_channel import open_channel
from app.inference.transports.transport import TransportKind
from tests.integration.test_cli_infer import parse
from tests.mlserver.server import EXPECTED, INPUT_SIZE, MLServer

ROOT = Path(__file__).resolve().parents[2]
SIZES = [(512, 512), (480, 640), (300, 700)]  # (h, w): square, wide, tall-ish


def run_cli(*args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app", *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )


def expected_boxes(model: str, h: int, w: int) -> list[tuple[list[float], int, float]]:
    """The model's boxes (128x128 letterboxed input) in the original w x h image."""
    r = min(INPUT_SIZE / h, INPUT_SIZE / w)
    left = round((INPUT_SIZE - round(w * r)) / 2 - 0.1)
    top = round((INPUT_SIZE - round(h * r)) / 2 - 0.1)
    out = []
    for (x1, y1, x2, y2), cls, score in EXPECTED[model]:
        box = [
            min(max((x1 - left) / r, 0), w),
            min(max((y1 - top) / r, 0), h),
            min(max((x2 - left) / r, 0), w),
            min(max((y2 - top) / r, 0), h),
        ]
        out.append((box, cls, score))
    return out


def assert_boxes(record: dict[str, Any], model: str) -> None:
    assert record["ok"], record["error"]
    found = [(d["box"], d["class_id"], d["score"]) for d in record["detections"]]
    want = expected_boxes(model, record["height"], record["width"])
    assert len(found) == len(want), found
    for (box, cls, score), (wbox, wcls, wscore) in zip(found, want, strict=True):
        assert cls == wcls and score == pytest.approx(wscore, abs=1e-4)
        assert box == pytest.approx(wbox, abs=1.0), (box, wbox)


@pytest.fixture(scope="module")
def images(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("images")
    rng = np.random.default_rng(3)
    for h, w in SIZES:
        cv2.imwrite(str(folder / f"{w}x{h}.png"), rng.integers(0, 255, (h, w, 3), np.uint8))
    return folder


def urls(mlserver: MLServer) -> list[str]:
    return [mlserver.grpc_url, mlserver.http_url]


@pytest.mark.parametrize("model", ["boxes_nms", "boxes_yolo"])
@pytest.mark.parametrize("protocol", ["grpc", "http"])
def test_infer_gives_the_boxes_and_names_what_is_missing_once(
    mlserver: MLServer, images: Path, model: str, protocol: str
) -> None:
    url = mlserver.grpc_url if protocol == "grpc" else mlserver.http_url
    done = run_cli("infer", "--url", url, "--model", model, str(images))
    assert done.returncode == 0, done.stderr[-3000:]
    records, summary = parse(done.stdout)
    assert len(records) == len(SIZES) and summary["ok"] == len(SIZES)
    for record in records:
        assert_boxes(record, model)
    # The client's side of the time split, none of the server's.
    assert summary["timing"]["round_trip_ms"] > 0
    assert not any(k.startswith("server_") for k in summary["timing"])
    # Each missing extension named once, in one plain sentence; no stack trace, no retry noise.
    for sentence in (
        MISSING[Extension.STATISTICS],
        MISSING[Extension.CONFIG],
        MISSING[Extension.SHARED_MEMORY],
    ):
        assert done.stderr.count(sentence) == 1, done.stderr
    assert (MISSING[Extension.BINARY_DATA] in done.stderr) is (protocol == "http")
    assert "Traceback" not in done.stderr


def test_the_index_says_state_ready_and_model_ready_says_true(mlserver: MLServer) -> None:
    headers: dict[str, str | bytes] = {}
    channel = open_channel(parse_url(mlserver.grpc_url), ConnectionOptions())
    try:
        raw = channel.repository_index(headers=headers, timeout_s=5)
        assert {m["state"] for m in raw} == {"State.READY"}  # MLServer's own wording
        check_live(channel, headers, 5)
        assert {m.state for m in list_models(channel, headers, 5)} == {"READY"}
        assert channel.is_model_ready("boxes_nms", headers=headers, timeout_s=5)
    finally:
        channel.close()


@pytest.mark.parametrize("protocol", ["grpc", "http"])
def test_a_session_skips_what_the_server_lacks(mlserver: MLServer, protocol: str) -> None:
    url = mlserver.grpc_url if protocol == "grpc" else mlserver.http_url
    with TritonSession(
        SessionSpec(
            endpoints=parse_endpoints(url),
            model="boxes_nms",
            delivery=Delivery(transport=TransportKind.AUTO, client_batch=2),
        )
    ) as session:
        assert session.info is not None and not session.info.config_known
        assert session.transport is not None and session.transport.kind is TransportKind.GRPC
        assert session.transport_note == MISSING[Extension.SHARED_MEMORY]
        # No config, but the input's first axis is -1 in the metadata: client batches go.
        assert session.batching == 2
        with pytest.raises(ExtensionMissingError, match="server statistics not available from this server"):
            session.read_server_counters()
        futures = [session.submit_future(np.zeros((480, 640, 3), np.uint8)) for _ in range(4)]
        results = [f.result(timeout=120) for f in futures]
    assert all(r.ok for r in results), [r.error for r in results]
    assert all(len(r.detections) == 2 for r in results)


def test_no_model_named_on_a_server_of_two_asks_for_one(mlserver: MLServer) -> None:
    with pytest.raises(SessionError) as caught:
        TritonSession(SessionSpec(endpoints=parse_endpoints(mlserver.http_url))).open()
    assert caught.value.kind is ErrorKind.NOT_FOUND
    assert set(caught.value.models) == {"boxes_nms", "boxes_yolo"}


def test_models_lists_both_with_their_profiles(mlserver: MLServer) -> None:
    for url in urls(mlserver):
        done = run_cli("models", "--url", url)
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("mlserver 1.7")
        assert "boxes_nms: READY" in done.stdout and "boxes_yolo: READY" in done.stdout
        assert "output: efficientnms" in done.stdout and "output: yolov8 (output0)" in done.stdout
        assert done.stdout.count(MISSING[Extension.CONFIG]) == 1


def test_bench_and_compare_against_mlserver(mlserver: MLServer, images: Path, tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    done = run_cli(
        *(
            "bench",
            "--url",
            mlserver.grpc_url,
            "--model",
            "boxes_nms",
            "--image",
            str(images / "640x480.png"),
        ),
        *(
            "--requests",
            "8",
            "--warmup",
            "1",
            "--concurrency",
            "1,2",
            "--compare-plain",
            "--output",
            str(out),
        ),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(out.read_text())
    for level in report["levels"]:
        assert level["failed"] == 0 and level["plain_failed"] == 0 and level["throughput"] > 0
        assert level["server_compute_ms"] is None  # no statistics: not made up
    assert MISSING[Extension.STATISTICS] in report["notes"]
    assert MISSING[Extension.SHARED_MEMORY] in report["notes"]
    assert (
        done.stderr.count(MISSING[Extension.STATISTICS]) + done.stdout.count(MISSING[Extension.STATISTICS])
        == 1
    )

    done = run_cli(
        *("compare", "--url", mlserver.http_url, "--model", "boxes_nms", "--model", "boxes_yolo"),
        str(images),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    records, summary = parse(done.stdout)
    for record in records:
        assert_boxes(record["a"], "boxes_nms")
        assert_boxes(record["b"], "boxes_yolo")
        # The same two boxes; the second differs in class (2 against 1): only the first matches.
        assert [m[:2] for m in record["matched"]] == [[0, 0]]
        assert record["only_a"] == [1] and record["only_b"] == [1]
    assert summary["total"] == len(SIZES)


def test_repository_control_and_tune_say_they_need_triton(mlserver: MLServer, images: Path) -> None:
    with RepositoryControl(parse_url(mlserver.http_url)) as control:
        assert {e.name for e in control.index()} == {"boxes_nms", "boxes_yolo"}
        with pytest.raises(RepositoryError) as caught:
            control.config("boxes_nms")
    assert caught.value.kind is RepositoryErrorKind.NOT_SUPPORTED
    assert "model-configuration extension" in str(caught.value)
    done = run_cli("repository", "--url", mlserver.grpc_url, "config", "boxes_nms")
    assert done.returncode == 2 and "does not have Triton's model-configuration extension" in done.stderr
    done = run_cli(
        "tune", "--url", mlserver.http_url, "--model", "boxes_nms", "--image", str(images / "640x480.png")
    )
    assert done.returncode == 2, done.stderr
    assert "Triton's model-configuration extension" in done.stderr and "Traceback" not in done.stderr
