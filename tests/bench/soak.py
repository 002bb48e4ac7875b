"""Soak: the real viewer playing a looped face video live for --minutes, plus a batch of
images every minute, both at once; one line of figures per minute, a summary at the end.

Each minute goes as a user would do it: open the batch's folder (the viewer stops the stream
to show the batch), then play the video again at once: the stream takes the view back while
the batch goes on in the background. "live fps in batch" is the display rate while the
batch ran (0 would mean they did not run together).

Per minute: the viewer's resident memory (RSS), its threads (OS threads, gRPC's included;
Python threads), open file descriptors, the live display rate, capture-to-display latency
p50/p95, request latency p50/p95/p99 (live and batch requests), the batch's result, and
the embedded server's RSS (tritonserver and its backend stubs) when the script started it.
Growth that does not level off (RSS, threads, fds) is a leak; the request log is bounded
to 10,000 rows, so the viewer's RSS may rise until the log is full, then should stay flat.

Run under a virtual display (the window is really drawn):
    xvfb-run -a .venv/bin/python tests/bench/soak.py [--minutes 30] [--batch-images 20]
        [--in-flight 2] [--url HOST:PORT] [--tracemalloc]
Without a display it runs offscreen. --tracemalloc (slower) also prints where Python's own
allocations grew from the end of minute 2 to the end: growth in RSS that is not there is
native (Qt, gRPC, the allocator). --smoke: two "minutes" of 1 s with 30 images each on a
short video (seconds; what `make test` runs so the script cannot rot).
The batch is big enough (150 images) to take a few seconds beside the live stream.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import threading
import time
import tracemalloc
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

if not os.environ.get("DISPLAY"):
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import cv2
import numpy as np
import qasync
import skimage.data
from PySide6.QtCore import qInstallMessageHandler
from PySide6.QtWidgets import QApplication

from app.inference.result import InferenceResult, Status
from app.resources import model_repository
from app.server.embedded import EmbeddedServer
from app.server.process_group import live_members
from app.ui.qt_app import qt_message
from app.ui.viewer import Viewer, ViewerOptions
from tests.media import make_face_video

SMOKE_MINUTE_S = 1.0  # --smoke: how long a "minute" lasts


def rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def os_threads() -> int:
    return len(os.listdir("/proc/self/task"))


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")


@dataclass
class Minute:
    """What the GUI thread saw during one minute (signals arrive on the GUI thread)."""

    display_ages: list[float] = field(default_factory=list)
    shown_at: list[float] = field(default_factory=list)  # monotonic time of each frame shown
    latencies: list[float] = field(default_factory=list)
    live_latencies: list[float] = field(default_factory=list)  # the stream's requests alone
    failures: int = 0

    def on_shown(self, _index: int, age_ms: float) -> None:
        self.display_ages.append(age_ms)
        self.shown_at.append(time.monotonic())

    def fps_between(self, start: float, end: float) -> float:
        return sum(1 for t in self.shown_at if start <= t <= end) / (end - start) if end > start else 0.0

    def on_result(self, result: InferenceResult, live: bool = False) -> None:
        if result.ok and result.latency_ms is not None:
            self.latencies.append(result.latency_ms)
            if live:
                self.live_latencies.append(result.latency_ms)
        elif result.status in (Status.FAILED, Status.TIMEOUT):  # not those the stream's stop cancels
            self.failures += 1


class Soak:
    def __init__(
        self, viewer: Viewer, video: Path, folder: Path, images: int, server: EmbeddedServer | None
    ) -> None:
        self.viewer, self.video, self.folder, self.images, self.server = viewer, video, folder, images, server
        self.minute = Minute()
        viewer.live.frame_shown.connect(lambda i, age: self.minute.on_shown(i, age))
        viewer.live.result.connect(lambda r: self.minute.on_result(r, live=True))
        viewer.runner.result.connect(lambda _job, r: self.minute.on_result(r))
        self.rows: list[dict[str, float]] = []
        self.baseline: tracemalloc.Snapshot | None = None
        self.url = ""
        self._server_totals: tuple[int, int, int] | None = None  # requests, queue ns, compute ns
        self._cpu_marks: tuple[float, float] | None = None  # viewer CPU s, server CPU s
        self.server_requests = 0  # requests the server completed in the last minute

    def cpu_marks(self) -> tuple[float, float]:
        """CPU seconds so far of this process (the viewer) and of the server's process group:
        per request or per frame they tell more work from waiting for a busy machine's CPU."""
        times = os.times()
        server = 0.0
        if self.server is not None and self.server.pid is not None:
            tick = os.sysconf("SC_CLK_TCK")
            for pid in live_members(os.getpgid(self.server.pid)):
                try:
                    with open(f"/proc/{pid}/stat") as f:
                        fields = f.read().rsplit(")", 1)[1].split()
                    server += (int(fields[11]) + int(fields[12])) / tick
                except (OSError, IndexError, ValueError):
                    pass
        return times.user + times.system, server

    def server_split(self) -> tuple[float, float]:
        """The server's own time per request since the last call (queue ms, compute ms:
        Triton's statistics of the model): whether a rise is the server's or the client's.
        Called off the GUI thread."""
        import tritonclient.grpc as grpcclient

        client = grpcclient.InferenceServerClient(self.url)
        try:
            stats = client.get_inference_statistics("face_detector", as_json=True)["model_stats"]
        finally:
            client.close()
        success = [m["inference_stats"] for m in stats]
        totals = (
            sum(int(i["success"].get("count", 0)) for i in success),
            sum(int(i["queue"].get("ns", 0)) for i in success),
            sum(int(i["compute_infer"].get("ns", 0)) + int(i["compute_input"].get("ns", 0))
                + int(i["compute_output"].get("ns", 0)) for i in success),
        )  # fmt: skip
        before, self._server_totals = self._server_totals, totals
        if before is None or totals[0] <= before[0]:
            return float("nan"), float("nan")
        n = self.server_requests = totals[0] - before[0]
        return (totals[1] - before[1]) / n / 1e6, (totals[2] - before[2]) / n / 1e6

    def server_rss(self) -> float:
        if self.server is None or self.server.pid is None:
            return float("nan")
        return sum(rss_mb(pid) for pid in live_members(os.getpgid(self.server.pid)))

    async def run(self, minutes: float, minute_s: float = 60.0) -> None:
        viewer = self.viewer
        while viewer.live.meter.shown < 10:
            if viewer.live.error or viewer.connection.state == "failed":
                raise SystemExit(
                    f"the live preview did not start: {viewer.live.error or viewer.connection.state}"
                )
            await asyncio.sleep(0.1)
        print(
            "min  rss MB  os thr  py thr  fds  display fps  display p50/p95 ms  request p50/p95/p99 ms"
            "  fails  batch ok/n  batch s  live fps in batch  log rows  server MB  live p50 ms"
            "  server queue/compute ms  load  viewer CPU ms/frame  server CPU ms/req",
            flush=True,
        )
        end = time.monotonic() + minutes * minute_s
        index = 0
        split = asyncio.get_running_loop().run_in_executor
        await split(None, self.server_split)
        self._cpu_marks = self.cpu_marks()
        while time.monotonic() < end:
            index += 1
            self.minute = Minute()
            started = time.monotonic()
            batch_seconds, batch_ok, live_fps = await self.batch()
            await asyncio.sleep(max(0.0, started + minute_s - time.monotonic()))
            server = await split(None, self.server_split)
            self.report(index, time.monotonic() - started, batch_ok, batch_seconds, live_fps, server)
            if index == 2 and tracemalloc.is_tracing():
                self.baseline = tracemalloc.take_snapshot()

    async def batch(self) -> tuple[float, int, float]:
        """The same folder each minute: entries are replaced, not added (memory stays a
        measure of leaks, not of more images kept). Opening it stops the stream; the video
        is played again at once and shows while the batch runs. (seconds, images ok, display
        frames per second while the batch ran)."""
        runner = self.viewer.runner
        finished = asyncio.Event()

        def on_finished(_job_id: int, _counts: object, _seconds: float) -> None:
            finished.set()  # emitted on the GUI thread, the event loop's

        runner.finished.connect(on_finished)
        started = time.monotonic()
        try:
            self.viewer.open_paths([str(self.folder)])
            self.viewer.live.open(str(self.video))  # the stream takes the view back
            await finished.wait()
        finally:
            runner.finished.disconnect(on_finished)
        ended = time.monotonic()
        counts = runner.latest_counts()
        return ended - started, counts.ok if counts else 0, self.minute.fps_between(started, ended)

    def report(
        self,
        index: int,
        seconds: float,
        batch_ok: int,
        batch_s: float,
        live_fps: float,
        server: tuple[float, float],
    ) -> None:
        m = self.minute
        row = {
            "minute": index,
            "rss": rss_mb(os.getpid()),
            "os_threads": os_threads(),
            "py_threads": threading.active_count(),
            "fds": open_fds(),
            "display_fps": len(m.display_ages) / seconds,
            "display_p50": percentile(m.display_ages, 50),
            "display_p95": percentile(m.display_ages, 95),
            "request_p50": percentile(m.latencies, 50),
            "request_p95": percentile(m.latencies, 95),
            "request_p99": percentile(m.latencies, 99),
            "failures": m.failures,
            "batch_ok": batch_ok,
            "batch_s": batch_s,
            "live_in_batch_fps": live_fps,
            "log_rows": self.viewer.window.request_log.model.rowCount(),
            "server_rss": self.server_rss(),
            "live_p50": percentile(m.live_latencies, 50),
            "server_queue_ms": server[0],
            "server_compute_ms": server[1],
            "load": os.getloadavg()[0],
        }
        marks = self.cpu_marks()
        if self._cpu_marks is not None:
            viewer_s, server_s = (now - then for now, then in zip(marks, self._cpu_marks, strict=True))
            row["viewer_cpu_ms_per_frame"] = viewer_s * 1000 / max(1, len(m.display_ages))
            row["server_cpu_ms_per_request"] = server_s * 1000 / max(1, self.server_requests)
        self._cpu_marks = marks
        self.rows.append(row)
        print(
            f"{index:3d}  {row['rss']:6.0f}  {row['os_threads']:6d}  {row['py_threads']:6d}  {row['fds']:3d}"
            f"  {row['display_fps']:11.1f}  {row['display_p50']:7.0f} / {row['display_p95']:5.0f}     "
            f"  {row['request_p50']:5.0f} / {row['request_p95']:4.0f} / {row['request_p99']:4.0f}    "
            f"  {m.failures:5d}  {batch_ok:4d}/{self.images:<4d}  {batch_s:7.1f}  {live_fps:17.1f}"
            f"  {row['log_rows']:8.0f}  {row['server_rss']:9.0f}  {row['live_p50']:10.1f}"
            f"  {server[0]:12.2f} / {server[1]:6.2f}  {row['load']:4.1f}"
            f"  {row.get('viewer_cpu_ms_per_frame', float('nan')):18.1f}"
            f"  {row.get('server_cpu_ms_per_request', float('nan')):17.1f}",
            flush=True,
        )

    def summary(self) -> None:
        rows = self.rows
        if len(rows) < 2:
            return
        first, last = rows[0], rows[-1]
        half = rows[len(rows) // 2 :]
        slope = (
            np.polyfit([r["minute"] for r in half], [r["rss"] for r in half], 1)[0] if len(half) > 1 else 0
        )
        print(f"\nover {len(rows)} minutes:")
        print(f"  viewer RSS      {first['rss']:.0f} MB -> {last['rss']:.0f} MB "
              f"(max {max(r['rss'] for r in rows):.0f}); second half {slope:+.2f} MB/min")  # fmt: skip
        print(f"  OS threads      {first['os_threads']} -> {last['os_threads']}; "
              f"Python threads {first['py_threads']} -> {last['py_threads']}")  # fmt: skip
        print(f"  open fds        {first['fds']} -> {last['fds']}")
        print(f"  Python threads at the end: {', '.join(sorted(t.name for t in threading.enumerate()))}")
        print(f"  server RSS      {first['server_rss']:.0f} MB -> {last['server_rss']:.0f} MB")
        print(f"  batches         {sum(r['batch_ok'] for r in rows)} of {len(rows) * self.images} images ok")
        print(f"  failed requests {sum(r['failures'] for r in rows)}")
        p50s = [r["request_p50"] for r in rows]
        print(f"  request p50     first minute {p50s[0]:.0f} ms, last {p50s[-1]:.0f} ms")
        print(
            f"  server, per request: queue {first['server_queue_ms']:.2f} -> "
            f"{last['server_queue_ms']:.2f} ms, compute {first['server_compute_ms']:.2f} -> "
            f"{last['server_compute_ms']:.2f} ms"
        )
        minutes = [r["minute"] for r in rows]
        for key, what in (
            ("live_p50", "live request p50 ms"),
            ("display_p50", "display p50 ms"),
            ("server_compute_ms", "server compute ms/request"),
            ("server_cpu_ms_per_request", "server CPU ms/request"),
            ("viewer_cpu_ms_per_frame", "viewer CPU ms/frame"),
            ("load", "load average"),
        ):
            values = [r.get(key, float("nan")) for r in rows]
            if len(values) > 2 and all(np.isfinite(values)):
                slope = np.polyfit(minutes, values, 1)[0]
                print(
                    f"  trend {what:27s} {slope:+.3f} per minute "
                    f"(first {values[0]:.1f}, last {values[-1]:.1f})"
                )
        live = np.array([r["live_p50"] for r in rows])
        server_side = np.array([r["server_queue_ms"] + r["server_compute_ms"] for r in rows])
        load = np.array([r["load"] for r in rows])
        if len(rows) > 2 and np.isfinite(live).all() and np.isfinite(server_side).all():
            print(
                f"  live p50 against the server's queue + compute: "
                f"r = {np.corrcoef(live, server_side)[0, 1]:.2f}; "
                f"against the load average: r = {np.corrcoef(live, load)[0, 1]:.2f}"
            )
        if self.baseline is not None:
            diff = tracemalloc.take_snapshot().compare_to(self.baseline, "lineno")
            total = sum(d.size_diff for d in diff) / 2**20
            print(f"  Python allocations since minute 2: {total:+.2f} MB; largest changes:")
            for d in diff[:8]:
                print(f"    {d.size_diff / 2**10:+9.0f} KiB  {d.traceback}")


def run(args: argparse.Namespace, url: str, video: Path, folder: Path, server: EmbeddedServer | None) -> None:
    app = QApplication.instance() or QApplication([sys.argv[0]])
    assert isinstance(app, QApplication)
    app.setQuitOnLastWindowClosed(False)
    qInstallMessageHandler(qt_message)
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    executor = ThreadPoolExecutor(4, thread_name_prefix="soak-io")
    viewer = Viewer(ViewerOptions(urls=[url], model="face_detector"), executor)
    viewer.live_ui.toolbar.in_flight.setValue(args.in_flight)
    viewer.live_ui.toolbar.loop.setChecked(True)
    viewer.live_ui.apply_options()
    soak = Soak(viewer, video, folder, args.batch_images, server)
    soak.url = url
    try:
        viewer.window.show()
        viewer.start()
        viewer.live.open(str(video))
        loop.run_until_complete(soak.run(args.minutes, SMOKE_MINUTE_S if args.smoke else args.minute_seconds))
        viewer.request_close()
        loop.run_until_complete(viewer.closed.wait())
    finally:
        executor.shutdown(wait=True, cancel_futures=True)
        loop.close()
        asyncio.set_event_loop(None)
    soak.summary()


def make_folder(folder: Path, count: int) -> Path:
    folder.mkdir()
    photos = [skimage.data.astronaut(), skimage.data.coffee(), skimage.data.chelsea()]
    for i in range(count):
        cv2.imwrite(
            str(folder / f"img_{i:03d}.jpg"), cv2.cvtColor(photos[i % len(photos)], cv2.COLOR_RGB2BGR)
        )
    return folder


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--batch-images", type=int, default=150)
    parser.add_argument("--in-flight", type=int, default=2)
    parser.add_argument(
        "--url", default=None, help="Triton gRPC HOST:PORT (default: start the embedded server)"
    )
    parser.add_argument("--tracemalloc", action="store_true", help="where Python allocations grew")
    parser.add_argument(
        "--minute-seconds", type=float, default=60.0, help='how long a "minute" lasts (shorter: quicker runs)'
    )
    parser.add_argument("--smoke", action="store_true", help="seconds: figures printed, meaningless")
    args = parser.parse_args()
    if args.smoke:
        args.minutes, args.batch_images = 2, 30
    if args.tracemalloc:
        tracemalloc.start()
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="soak-")))
        os.environ["TRITON_VIEWER_SETTINGS_DIR"] = str(tmp / "settings")
        video = tmp / "face.avi"
        frames = 30 if args.smoke else 300  # looped
        print(f"writing a {frames / 30:.0f} s 640x480 30 fps face video (looped)…", file=sys.stderr)
        make_face_video(video, frames=frames, fps=30, size=(640, 480))
        folder = make_folder(tmp / "batch", args.batch_images)
        server = None
        url = args.url
        if url is None:
            print("starting the embedded server…", file=sys.stderr)
            server = stack.enter_context(EmbeddedServer(model_repository()))
            url = server.grpc_url
        print(
            f"soak: {args.minutes:g} min of a looped 640x480 video live (in-flight {args.in_flight}) plus "
            f"{args.batch_images} images each minute; {os.cpu_count()} CPUs, "
            f"display: {os.environ.get('QT_QPA_PLATFORM') or 'xcb on ' + os.environ['DISPLAY']}",
            flush=True,
        )
        run(args, url, video, folder, server)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
