"""Running the app (source or frozen) as a subprocess and reading its smoke-test output."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def run(
    cmd: Sequence[str], timeout: float = 180, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run(
        list(cmd),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=full_env,
        stdin=subprocess.DEVNULL,
    )


def smoke_record(stdout: str) -> dict[str, Any]:
    """The JSON record the smoke test printed before "smoke test passed"."""
    lines = [ln for ln in stdout.splitlines() if ln.strip()]
    assert lines[-1] == "smoke test passed", stdout
    record: dict[str, Any] = json.loads(lines[-2])
    return record


def assert_astronaut_face(record: dict[str, Any]) -> None:
    assert record["ok"] is True and record["error"] is None
    assert (record["width"], record["height"]) == (512, 512)
    faces = [d for d in record["detections"] if d["label"] == "face"]
    assert len(faces) == 1, record
    x1, y1, x2, y2 = faces[0]["box"]
    # skimage's astronaut: the face is around x 180..274, y 82..176.
    assert 165 < x1 < 195 and 260 < x2 < 290 and 67 < y1 < 97 and 160 < y2 < 190, faces[0]
