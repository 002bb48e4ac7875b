"""An output file the user made private stays private: `infer --format coco --output`, the
streamed `.jsonl` and `evaluate --output` replace a 0600 file with a 0600 file (they used to
come back 0644); a new file gets the umask's permissions as before."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import cv2
import numpy as np
import pytest

from app.server.embedded import EmbeddedServer
from tests.cli_runner import run_cli_in_process
from tests.evaluation_data import write_dataset
from tests.integration.test_cli_evaluate import CLASSES, FIXED

pytestmark = pytest.mark.slow


def private(path: Path) -> Path:
    path.write_text("the previous results\n")
    path.chmod(0o600)
    return path


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_replaced_outputs_keep_their_permissions(triton: EmbeddedServer, tmp_path: Path) -> None:
    images = tmp_path / "images"
    images.mkdir()
    cv2.imwrite(str(images / "a.png"), np.full((48, 48, 3), 120, np.uint8))
    url = triton.grpc_url
    coco, jsonl = private(tmp_path / "out.json"), private(tmp_path / "out.jsonl")
    for output, fmt in ((coco, "coco"), (jsonl, "jsonl")):
        run = run_cli_in_process(
            "infer",
            "--url",
            url,
            "--model",
            "fixed_cost",
            "--format",
            fmt,
            "--output",
            str(output),
            str(images),
        )
        assert run.returncode == 0, run.stderr
        assert output.read_text() != "the previous results\n", "replaced"
        assert mode(output) == 0o600, (fmt, oct(mode(output)))

    dataset, extra = write_dataset("coco", tmp_path / "dataset", FIXED, CLASSES)
    report = private(tmp_path / "report.json")
    run = run_cli_in_process(
        "evaluate", "--url", url, str(dataset), "--model", "fixed_versions", "--output", str(report), *extra
    )
    assert run.returncode == 0, run.stderr
    assert report.read_text().startswith("{") and mode(report) == 0o600

    new = tmp_path / "new.jsonl"
    run = run_cli_in_process(
        "infer", "--url", url, "--model", "fixed_cost", "--output", str(new), str(images)
    )
    assert run.returncode == 0 and mode(new) == 0o666 & ~_umask()


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current
