"""Running the app (source or frozen) as a subprocess and reading its smoke-test output."""

from __future__ import annotations

import configparser
import json
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def run_clean(
    cmd: Sequence[str], env: dict[str, str], cwd: Path, timeout: float = 180
) -> subprocess.CompletedProcess[str]:
    """Run with exactly `env` (like `env -i`): nothing of the test run's environment leaks in."""
    return subprocess.run(
        list(cmd),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        stdin=subprocess.DEVNULL,
    )


def run(
    cmd: Sequence[str], timeout: float = 180, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run from the repository root with the test run's environment plus `env`."""
    return run_clean(cmd, env={**os.environ, **(env or {})}, cwd=ROOT, timeout=timeout)


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


def read_entry(path: Path) -> dict[str, str]:
    """The [Desktop Entry] group of a .desktop file."""
    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # keys are case-sensitive
    parser.read(path, encoding="utf-8")
    return dict(parser["Desktop Entry"])


def exec_argv(value: str) -> list[str]:
    """An Exec value split the way the Desktop Entry Specification says a launcher does."""
    # 1. The string value's escapes.
    text, i = "", 0
    while i < len(value):
        if value[i] == "\\" and i + 1 < len(value):
            text += {"s": " ", "n": "\n", "t": "\t", "r": "\r", "\\": "\\"}.get(value[i + 1], value[i + 1])
            i += 2
        else:
            text += value[i]
            i += 1
    # 2. Arguments: separated by spaces; in double quotes, \ escapes " ` $ and itself.
    args: list[str] = []
    current, quoted, started, i = "", False, False, 0
    while i < len(text):
        c = text[i]
        if quoted and c == "\\" and i + 1 < len(text) and text[i + 1] in '"`$\\':
            current += text[i + 1]
            i += 1
        elif c == '"':
            quoted, started = not quoted, True
        elif c == " " and not quoted:
            if started:
                args.append(current)
            current, started = "", False
        else:
            current, started = current + c, True
        i += 1
    assert not quoted, f"unbalanced quotes in {value!r}"
    if started:
        args.append(current)
    # 3. %% is a literal %.
    return [a.replace("%%", "%") for a in args]
