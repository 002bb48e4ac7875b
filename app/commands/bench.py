"""`python -m app bench`: concurrency sweep, the app's pipeline vs a plain tritonclient async loop.

For each level: (a) a `TritonSession` with `max_in_flight = level` gets the decoded image N
times (pre-processing, sending, decoding, result objects: the whole pipeline); (b) a plain
`tritonclient.grpc` loop sends the same pre-processed tensor to the same model with
`async_infer`, a semaphore of `level` slots bounding what is in flight. Warm-up requests
run before each measurement. Throughput, latency p50/p95/p99 and app/plain ratio.
"""

from __future__ import annotations

import argparse
import functools
import json
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import tritonclient.grpc as grpcclient

from app.commands.common import (
    DECODE_WORKERS,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    add_connection_arguments,
    add_model_arguments,
    connection_options,
    eprint,
    profile_overrides,
    server_urls,
)
from app.commands.progress import Progress
from app.inference.connection import ConnectionOptions
from app.inference.errors import SessionError
from app.inference.images import read_image
from app.inference.profile import ProfileError, preprocess
from app.inference.result import InferenceResult
from app.inference.session import TritonSession
from app.resources import sample_image


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_connection_arguments(p, repeatable_url=False)
    add_model_arguments(p)
    p.add_argument(
        "--concurrency",
        default="1,2,4,8,16",
        metavar="LEVELS",
        help="comma-separated in-flight levels to measure (default 1,2,4,8,16)",
    )
    p.add_argument("--requests", type=int, default=200, metavar="N", help="requests per level and pipeline")
    p.add_argument(
        "--warmup", type=int, default=None, metavar="N", help="warm-up requests (default 2x level, >= 10)"
    )
    p.add_argument(
        "--image", default=None, metavar="PATH", help="image to send (default: the bundled astronaut)"
    )
    p.add_argument("--output", default=None, metavar="FILE", help="also write the figures as JSON")


@dataclass
class Figures:
    requests: int
    ok: int
    failed: int
    seconds: float
    throughput: float
    p50_ms: float | None
    p95_ms: float | None
    p99_ms: float | None
    first_error: str | None = None


def _figures(
    latencies_ms: list[float], requests: int, failed: int, seconds: float, error: str | None
) -> Figures:
    lat = np.asarray(latencies_ms, np.float64)
    p50, p95, p99 = (float(v) for v in np.percentile(lat, [50, 95, 99])) if lat.size else (None,) * 3
    return Figures(
        requests=requests,
        ok=requests - failed,
        failed=failed,
        seconds=round(seconds, 4),
        throughput=round(requests / seconds, 2) if seconds > 0 else 0.0,
        p50_ms=None if p50 is None else round(p50, 3),
        p95_ms=None if p95 is None else round(p95, 3),
        p99_ms=None if p99 is None else round(p99, 3),
        first_error=error,
    )


def parse_levels(text: str) -> list[int]:
    try:
        levels = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise UsageError(
            f"--concurrency expects comma-separated integers, e.g. 1,2,4; got {text!r}"
        ) from None
    if not levels or min(levels) < 1:
        raise UsageError(f"--concurrency levels must be >= 1; got {text!r}")
    return levels


class _Collector:
    """Latencies and failures of one run, filled from callback threads."""

    def __init__(self, expected: int, progress: Progress | None) -> None:
        self.expected = expected
        self.progress = progress
        self.latencies: list[float] = []
        self.failed = 0
        self.first_error: str | None = None
        self._count = 0
        self._cond = threading.Condition()

    def add(self, latency_ms: float, error: str | None) -> None:
        with self._cond:
            self._count += 1
            if error is None:
                self.latencies.append(latency_ms)
            else:
                self.failed += 1
                self.first_error = self.first_error or error
            if self._count >= self.expected:
                self._cond.notify_all()
        if self.progress is not None:
            self.progress.done(error is None)

    def wait(self) -> None:
        with self._cond:
            self._cond.wait_for(lambda: self._count >= self.expected)


def run_app(session: TritonSession, image: np.ndarray, requests: int, progress: Progress | None) -> Figures:
    """N submissions of the decoded image through the session (its window = the level)."""
    collector = _Collector(requests, progress)

    def on_result(result: InferenceResult) -> None:
        collector.add(result.latency_ms or 0.0, None if result.ok else result.error or result.status.value)

    t0 = time.perf_counter()
    for _ in range(requests):
        session.submit(image, on_result, source="bench", block=True)
    collector.wait()
    seconds = time.perf_counter() - t0
    return _figures(collector.latencies, requests, collector.failed, seconds, collector.first_error)


class PlainLoop:
    """The baseline: one tritonclient gRPC client, async_infer, a semaphore of `level` slots."""

    def __init__(
        self, url: str, options: ConnectionOptions, model: str, tensor: np.ndarray, profile: Any
    ) -> None:
        self.client = grpcclient.InferenceServerClient(
            url, ssl=options.ssl, root_certificates=options.root_certificates
        )
        self.model = model
        self.headers = dict(options.headers) or None
        inp = grpcclient.InferInput(profile.input_name, list(tensor.shape), profile.input_dtype)
        inp.set_data_from_numpy(tensor)
        self.inputs = [inp]
        self.output_names = list(profile.output_names)
        self.outputs = [grpcclient.InferRequestedOutput(n) for n in self.output_names]

    def close(self) -> None:
        self.client.close()

    def run(self, level: int, requests: int, timeout_s: float, progress: Progress | None) -> Figures:
        collector = _Collector(requests, progress)
        slots = threading.Semaphore(level)

        def done(started: float, result: Any, error: Any) -> None:
            try:
                if error is None:
                    for name in self.output_names:  # what any client does with a reply
                        result.as_numpy(name)
                collector.add((time.perf_counter() - started) * 1000, None if error is None else str(error))
            finally:
                slots.release()

        t0 = time.perf_counter()
        for _ in range(requests):
            slots.acquire()
            started = time.perf_counter()
            try:
                self.client.async_infer(
                    self.model,
                    self.inputs,
                    functools.partial(done, started),
                    outputs=self.outputs,
                    client_timeout=timeout_s,
                    headers=self.headers,
                )
            except Exception as e:
                slots.release()
                collector.add(0.0, str(e))
        collector.wait()
        seconds = time.perf_counter() - t0
        return _figures(collector.latencies, requests, collector.failed, seconds, collector.first_error)


def _session(
    args: argparse.Namespace, url: str, options: ConnectionOptions, overrides: Any, level: int
) -> TritonSession:
    return TritonSession(
        [url],
        args.model,
        options=options,
        profile_overrides=overrides,
        timeout_s=args.timeout,
        max_in_flight=level,
        decode_workers=DECODE_WORKERS,
        send_in_caller=True,  # this thread may block; one thread hop less per request
    ).open()


def sweep(args: argparse.Namespace, url: str, options: ConnectionOptions, overrides: Any) -> dict[str, Any]:
    levels = parse_levels(args.concurrency)
    image_path = Path(args.image) if args.image else sample_image()
    try:
        image = read_image(image_path)
    except ValueError as e:
        raise UsageError(f"--image: {e}") from None
    report: dict[str, Any] = {
        "url": url,
        "image": str(image_path),
        "width": int(image.shape[1]),
        "height": int(image.shape[0]),
        "requests": args.requests,
        "levels": [],
    }
    for level in levels:
        warmup = args.warmup if args.warmup is not None else max(10, 2 * level)
        session = _session(args, url, options, overrides, level)
        try:
            assert session.info is not None
            report["model"] = session.info.name
            tensor, _ = preprocess(image, session.info.profile)
            eprint(f"level {level}: app pipeline ({warmup} warm-up, {args.requests} measured)")
            if warmup:
                run_app(session, image, warmup, None)
            app = run_app(session, image, args.requests, Progress(args.requests, what="requests"))
            plain_loop = PlainLoop(url, options, session.info.name, tensor, session.info.profile)
        finally:
            session.close()
        try:
            eprint(f"level {level}: plain tritonclient loop ({warmup} warm-up, {args.requests} measured)")
            if warmup:
                plain_loop.run(level, warmup, args.timeout, None)
            plain = plain_loop.run(
                level, args.requests, args.timeout, Progress(args.requests, what="requests")
            )
        finally:
            plain_loop.close()
        ratio = round(app.throughput / plain.throughput, 3) if plain.throughput > 0 else None
        report["levels"].append(
            {"concurrency": level, "app": asdict(app), "plain": asdict(plain), "ratio": ratio}
        )
    return report


def format_table(report: dict[str, Any]) -> str:
    head = (
        f"model {report.get('model')} at {report['url']}, image {report['width']}x{report['height']}, "
        f"{report['requests']} requests per level and pipeline"
    )
    rows = [
        head,
        "",
        f"{'level':>5}  {'pipeline':<8} {'req/s':>9} {'p50 ms':>9} {'p95 ms':>9} {'p99 ms':>9} {'failed':>6}",
    ]

    def ms(v: float | None) -> str:
        return "-" if v is None else f"{v:.2f}"

    for entry in report["levels"]:
        for name in ("app", "plain"):
            f = entry[name]
            rows.append(
                f"{entry['concurrency']:>5}  {name:<8} {f['throughput']:>9.1f} {ms(f['p50_ms']):>9} "
                f"{ms(f['p95_ms']):>9} {ms(f['p99_ms']):>9} {f['failed']:>6}"
            )
        ratio = "-" if entry["ratio"] is None else f"{entry['ratio']:.3f}"
        rows.append(f"{entry['concurrency']:>5}  {'ratio':<8} {ratio:>9}  (app / plain throughput)")
    return "\n".join(rows) + "\n"


def run(args: argparse.Namespace) -> int:
    try:
        if args.requests < 1:
            raise UsageError("--requests must be >= 1")
        parse_levels(args.concurrency)
        options = connection_options(args)
        overrides = profile_overrides(args)
        with server_urls(args) as urls:
            report = sweep(args, urls[0], options, overrides)
    except (UsageError, SessionError, ProfileError) as e:
        eprint(f"error: {e}")
        return EXIT_USAGE
    except KeyboardInterrupt:
        eprint("interrupted")
        return EXIT_INTERRUPTED
    print(format_table(report), end="", flush=True)
    if args.output:
        try:
            Path(args.output).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        except OSError as e:
            eprint(f"error: --output {args.output}: cannot write it ({e.strerror or e})")
            return EXIT_USAGE
    failed = any(entry[name]["failed"] for entry in report["levels"] for name in ("app", "plain"))
    for entry in report["levels"]:
        for name in ("app", "plain"):
            if entry[name]["first_error"]:
                eprint(f"level {entry['concurrency']} {name}: first failure: {entry[name]['first_error']}")
    return EXIT_FAILED if failed else EXIT_OK
