"""How fast the embedded server's process group is gone once its owner dies, and what the
lifeline and the sweep cost.

Per round: an owner process starts the server from a thread that then exits (as the viewer
does), is SIGKILLed once the server answers, and the time until no member of the server's
group (tritonserver, its stubs, the watcher) runs is measured by polling /proc every 1 ms.
Also: the watcher's memory, a normal stop(timeout=0) with the watcher, and one sweep of
/dev/shm and the temp folder.
Run: .venv/bin/python tests/bench/bench_lifeline.py [--rounds 5]
--smoke: one round, and servers with one small test model instead of the bundled ones
(seconds; what `make test` runs so the script cannot rot).
"""

from __future__ import annotations

import argparse
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from app.resources import model_repository  # noqa: E402
from app.server.embedded import EmbeddedServer, remove_leftovers_of_dead_owners  # noqa: E402
from tests.integration.procs import group_members, owned_by  # noqa: E402

OWNER = [sys.executable, "-m", "tests.integration.owner_process", "--from-thread"]


def gone_after_owner_sigkill(repository: Path) -> float:
    """Seconds from the owner's SIGKILL to the last member of its server's group gone."""
    with subprocess.Popen(
        [*OWNER, "--model-repository", str(repository)],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    ) as proc:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("ready"), line
        owned = owned_by(proc.pid)
        assert owned.live_members(), "no server found"
        proc.send_signal(signal.SIGKILL)
        killed = time.perf_counter()
        while owned.live_members():
            if time.perf_counter() - killed > 30:
                raise SystemExit(f"still running 30 s after the owner's SIGKILL: {owned.live_members()}")
            time.sleep(0.001)
        seconds = time.perf_counter() - killed
        proc.wait()
    return seconds


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def small_repository(folder: Path) -> Path:
    """A repository with one light test model (one backend stub)."""
    (folder / "fixed_yolov8").symlink_to(ROOT / "tests" / "models" / "fixed_yolov8", target_is_directory=True)
    return folder


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--smoke", action="store_true", help="seconds: figures printed, meaningless")
    args = parser.parse_args()
    with ExitStack() as stack:
        repository = model_repository()
        if args.smoke:
            args.rounds = 1
            repository = small_repository(Path(stack.enter_context(tempfile.TemporaryDirectory())))
        measure(args.rounds, repository)


def measure(rounds: int, repository: Path) -> None:
    times = [gone_after_owner_sigkill(repository) for _ in range(rounds)]
    ms = sorted(t * 1000 for t in times)
    print(
        f"group gone after the owner's SIGKILL ({rounds} rounds): "
        f"median {statistics.median(ms):.1f} ms, min {ms[0]:.1f} ms, max {ms[-1]:.1f} ms"
    )

    server = EmbeddedServer(repository).start()
    assert server.pid is not None
    members = group_members(server.pid)
    watcher = [p for p in members if Path(f"/proc/{p}/cmdline").read_bytes().startswith(b"/bin/sh")]
    print(f"watcher: {len(watcher)} process, RSS {sum(rss_kb(p) for p in watcher)} kB")
    started = time.perf_counter()
    server.stop(timeout=0)
    print(
        f"stop(timeout=0): {(time.perf_counter() - started) * 1000:.1f} ms, "
        f"group members left: {len(group_members(server.pid))}"
    )

    started = time.perf_counter()
    removed = remove_leftovers_of_dead_owners()
    print(
        f"sweep of /dev/shm and the temp folder: {(time.perf_counter() - started) * 1000:.2f} ms "
        f"({len(removed)} removed)"
    )


if __name__ == "__main__":
    main()
