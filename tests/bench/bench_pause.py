"""`infer` with its own (supervised) server when the server is paused: SIGSTOP for 3, 10 and
20 s, then SIGCONT, while 8 requests are in flight with `--timeout 60` (what a suspended
laptop does to it). Triton's Python backend often does not survive that: its stubs are found
"not healthy", and the server may crash. What counts is that nothing is lost: every record
ok, the crashed server restarted by the supervisor.

Per pause: a fresh `python -m app infer --timeout 60 --concurrency 8 FOLDER` (no --url: its
own embedded server, the bundled models); once 50 records are out, the server's whole
process group (tritonserver and its Python-backend stubs; `--target server`: tritonserver
alone) is stopped for the pause, then continued. Printed: the records by status, the exit
status, how often the server was restarted and how it ended, the run's length.
Run: .venv/bin/python tests/bench/bench_pause.py [--pauses 3,10,20] [--images 2000]
--smoke: 60 images, one pause of 1 s of tritonserver alone (the whole group makes the Python
backend crash some 30 s later: not a smoke run's business); the server's start plus seconds.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import cv2

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from app.resources import sample_image  # noqa: E402
from tests.integration.procs import eventually, group_members, owned_by  # noqa: E402


def make_images(folder: Path, count: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    data = cv2.imencode(".jpg", cv2.imread(str(sample_image())))[1].tobytes()
    for i in range(count):
        (folder / f"img_{i:05d}.jpg").write_bytes(data)
    return folder


def lines_in(path: Path) -> int:
    try:
        with path.open("rb") as f:
            return sum(1 for _ in f)
    except OSError:
        return 0


@dataclasses.dataclass
class PauseRun:
    pause_s: float
    records_before: int  # when the pause began
    statuses: dict[str, int]
    exit: int
    restarts: int
    server_ended: list[str]  # how each server that died ended
    after_cont_s: float
    run_s: float
    problems: list[str]  # a few distinct errors of the records not ok


def one_pause(folder: Path, count: int, pause_s: float, group: bool, work: Path, timeout: str) -> PauseRun:
    out, err = work / f"records_{pause_s:g}.jsonl", work / f"stderr_{pause_s:g}.txt"
    command = [sys.executable, "-m", "app", "infer", "--timeout", timeout, "--concurrency", "8", str(folder)]
    started = time.monotonic()
    with out.open("w") as stdout, err.open("w") as stderr:
        proc = subprocess.Popen(command, cwd=ROOT, stdout=stdout, stderr=stderr)
    groups: list[int] = []
    try:
        if not eventually(lambda: lines_in(out) >= min(50, count // 2) or proc.poll() is not None, 600):
            raise SystemExit("infer wrote no records")
        if proc.poll() is not None:
            raise SystemExit(f"infer ended before the pause: {err.read_text()[-1500:]}")
        (server,) = owned_by(proc.pid).groups
        groups.append(server)
        stop, cont = (os.killpg, os.killpg) if group else (os.kill, os.kill)
        before = lines_in(out)
        stop(server, signal.SIGSTOP)
        time.sleep(pause_s)
        stop_end = time.monotonic()
        cont(server, signal.SIGCONT)
        proc.wait(timeout=1800)
        ended = time.monotonic()
        groups.extend(owned_by(proc.pid).groups)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pgid in groups:  # a run that failed half-way: no server left behind
            if group_members(pgid):
                os.killpg(pgid, signal.SIGKILL)
    records = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    statuses = collections.Counter(r["status"] for r in records if "status" in r)
    text = err.read_text()
    return PauseRun(
        pause_s=pause_s,
        records_before=before,
        statuses=dict(statuses),
        exit=proc.returncode,
        restarts=text.count("runs again at"),
        server_ended=re.findall(
            r"the embedded Triton server (crashed \(\w+\)|was killed \(\w+\)|exited with status \d+)", text
        ),
        after_cont_s=ended - stop_end,
        run_s=ended - started,
        problems=sorted({r["error"][:100] for r in records if r.get("status") not in (None, "ok")})[:3],
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pauses", default="3,10,20", help="seconds, comma-separated")
    parser.add_argument("--images", type=int, default=2000)
    parser.add_argument("--timeout", default="60", help="infer's --timeout (seconds)")
    parser.add_argument(
        "--target",
        choices=["group", "server"],
        default="group",
        help="stop the whole group or tritonserver alone",
    )
    parser.add_argument("--smoke", action="store_true", help="seconds: figures printed, meaningless")
    args = parser.parse_args()
    pauses = [1.0] if args.smoke else [float(p) for p in args.pauses.split(",")]
    count = 60 if args.smoke else args.images
    target = "server" if args.smoke else args.target
    with tempfile.TemporaryDirectory(prefix="bench-pause-") as tmp:
        work = Path(tmp)
        folder = make_images(work / "images", count)
        print(f"{count} images, 8 in flight, --timeout {args.timeout}, SIGSTOP of the {target}")
        for pause in pauses:
            r = one_pause(folder, count, pause, target == "group", work, args.timeout)
            ok = r.statuses.get("ok", 0)
            ended = f" ({', '.join(r.server_ended)})" if r.server_ended else ""
            print(
                f"pause {pause:g} s: {ok} of {count} ok, {count - ok} not ok {r.statuses}, exit {r.exit}, "
                f"server restarts {r.restarts}{ended}, paused after {r.records_before} records, run "
                f"{r.run_s:.1f} s ({r.after_cont_s:.1f} s after SIGCONT)",
                flush=True,
            )
            for problem in r.problems:
                print(f"    e.g. {problem}")


if __name__ == "__main__":
    main()
