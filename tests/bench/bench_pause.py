"""`infer` with its own (supervised) server when the server is paused: SIGSTOP for 4 s (or
what --pauses says), then SIGCONT, while 8 requests are in flight with `--timeout 60` (what a
suspended laptop does to it). Triton's Python backend often does not survive that: its stubs
are found "not healthy", and the server may crash. What counts is that nothing is lost and
nothing waits for the whole timeout: every input's record ok, exactly once (none twice, none
missing), the run about as long as the same work without a pause plus the pause (attempts
left unanswered are sent again after the attempt timeout; a crashed server restarted by the
supervisor).

Per pause: a fresh `python -m app infer --timeout 60 --concurrency 8 FOLDER` (no --url: its
own embedded server, the bundled models); once 50 records are out, the server's whole
process group (tritonserver and its Python-backend stubs; `--target server`: tritonserver
alone) is stopped for the pause, then continued. First the same run without a pause (the
time the work takes). Printed: the records by status, inputs with two records or none, the
exit status, how often the server was restarted and how it ended, the run's length against
the unpaused run's plus the pause.
Run: .venv/bin/python tests/bench/bench_pause.py [--pauses 4] [--images 1500] [--attempt-timeout S]
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
    twice: int  # inputs with more than one record
    retried: int | None  # attempts sent again (the summary's "retried")
    missing: int  # inputs with no record


def run_infer(
    folder: Path, out: Path, err: Path, timeout: str, attempt_timeout: str | None
) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "app", "infer", "--timeout", timeout, "--concurrency", "8"]
    if attempt_timeout is not None:
        command += ["--attempt-timeout", attempt_timeout]
    with out.open("w") as stdout, err.open("w") as stderr:
        return subprocess.Popen([*command, str(folder)], cwd=ROOT, stdout=stdout, stderr=stderr)


def records_of(out: Path) -> list[dict]:
    return [json.loads(line) for line in out.read_text().splitlines() if line.strip()]


def once_each(records: list[dict], count: int) -> tuple[int, int]:
    """(inputs with two records or more, inputs with none) of the `count` images."""
    seen = collections.Counter(r["source"] for r in records if "source" in r)
    return sum(1 for n in seen.values() if n > 1), count - len(seen)


def unpaused(folder: Path, work: Path, timeout: str, attempt_timeout: str | None) -> tuple[float, int]:
    """The same run without a pause: its length (from the first record, as the paused runs'
    work is) and its records ok."""
    out, err = work / "records_unpaused.jsonl", work / "stderr_unpaused.txt"
    proc = run_infer(folder, out, err, timeout, attempt_timeout)
    try:
        if not eventually(lambda: lines_in(out) >= 1 or proc.poll() is not None, 600):
            raise SystemExit("infer wrote no records")
        first = time.monotonic()
        proc.wait(timeout=1800)
        return time.monotonic() - first, sum(1 for r in records_of(out) if r.get("status") == "ok")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def one_pause(
    folder: Path,
    count: int,
    pause_s: float,
    group: bool,
    work: Path,
    timeout: str,
    attempt_timeout: str | None = None,
) -> PauseRun:
    out, err = work / f"records_{pause_s:g}.jsonl", work / f"stderr_{pause_s:g}.txt"
    proc = run_infer(folder, out, err, timeout, attempt_timeout)
    groups: list[int] = []
    try:
        if not eventually(lambda: lines_in(out) >= 1 or proc.poll() is not None, 600):
            raise SystemExit("infer wrote no records")
        started = time.monotonic()  # from the first record: the server's start is not the work
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
    records = records_of(out)
    twice, missing = once_each(records, count)
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
        twice=twice,
        missing=missing,
        retried=next((r["summary"].get("retried") for r in records if "summary" in r), None),
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pauses", default="4", help="seconds, comma-separated")
    parser.add_argument("--images", type=int, default=1500)
    parser.add_argument("--timeout", default="60", help="infer's --timeout (seconds)")
    parser.add_argument(
        "--attempt-timeout", default=None, help="infer's --attempt-timeout (default: its own)"
    )
    parser.add_argument("--no-baseline", action="store_true", help="skip the run without a pause")
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
        attempts = f", --attempt-timeout {args.attempt_timeout}" if args.attempt_timeout else ""
        print(f"{count} images, 8 in flight, --timeout {args.timeout}{attempts}, SIGSTOP of the {target}")
        work_s = None
        if not (args.smoke or args.no_baseline):
            work_s, ok = unpaused(folder, work, args.timeout, args.attempt_timeout)
            print(f"no pause: {ok} of {count} ok, work {work_s:.1f} s (from the first record)", flush=True)
        for pause in pauses:
            r = one_pause(folder, count, pause, target == "group", work, args.timeout, args.attempt_timeout)
            ok = r.statuses.get("ok", 0)
            ended = f" ({', '.join(r.server_ended)})" if r.server_ended else ""
            against = (
                f" = work {work_s:.1f} s + pause {pause:g} s + {r.run_s - work_s - pause:+.1f} s"
                if work_s is not None
                else ""
            )
            print(
                f"pause {pause:g} s: {ok} of {count} ok, {count - ok} not ok {r.statuses}, twice "
                f"{r.twice}, missing {r.missing}, attempts sent again {r.retried}, exit {r.exit}, "
                f"server restarts {r.restarts}{ended}, "
                f"paused after {r.records_before} records, run {r.run_s:.1f} s{against} "
                f"({r.after_cont_s:.1f} s after SIGCONT)",
                flush=True,
            )
            for problem in r.problems:
                print(f"    e.g. {problem}")


if __name__ == "__main__":
    main()
