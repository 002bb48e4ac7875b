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
from dataclasses import asdict
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
from app.inference.channel import ConnectionOptions
from app.inference.errors import SessionError
from app.inference.profile import ProfileError, preprocess
from app.inference.session import TritonSession
from app.pipeline.load import LoadFigures, LoadJob, figures_of
from app.resources import sample_image
from app.sources.images import read_image


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


def run_app(
    session: TritonSession, image: np.ndarray, requests: int, progress: Progress | None
) -> LoadFigures:
    """N submissions of the decoded image through the session, at its window's concurrency."""
    on_done = progress.done if progress is not None else None
    return LoadJob(session, [image], requests, session.max_in_flight, on_done).run()


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

    def run(self, level: int, requests: int, timeout_s: float, progress: Progress | None) -> LoadFigures:
        # The baseline keeps its own plain bookkeeping: it must not use the app's pipeline.
        slots = threading.Semaphore(level)
        ended = threading.Semaphore(0)
        latencies: list[float] = []
        errors: list[str] = []

        def done(started: float, result: Any, error: Any) -> None:
            try:
                if error is None:
                    for name in self.output_names:  # what any client does with a reply
                        result.as_numpy(name)
                    latencies.append((time.perf_counter() - started) * 1000)
                else:
                    errors.append(str(error))
                if progress is not None:
                    progress.done(error is None)
            finally:
                slots.release()
                ended.release()

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
                ended.release()
                errors.append(str(e))
        for _ in range(requests):
            ended.acquire()
        seconds = time.perf_counter() - t0
        return figures_of(latencies, requests, len(errors), seconds, errors[0] if errors else None)


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
    for n, level in enumerate(levels, start=1):
        stage = f"level {level} ({n}/{len(levels)})"
        warmup = args.warmup if args.warmup is not None else max(10, 2 * level)
        session = _session(args, url, options, overrides, level)
        try:
            assert session.info is not None
            report["model"] = session.info.name
            tensor, _ = preprocess(image, session.info.profile)
            eprint(f"{stage}: app pipeline ({warmup} warm-up, {args.requests} measured)")
            if warmup:
                run_app(session, image, warmup, None)
            progress = Progress(args.requests, what="requests", label=f"{stage}, app")
            app = run_app(session, image, args.requests, progress)
            progress.finish()
            plain_loop = PlainLoop(url, options, session.info.name, tensor, session.info.profile)
        finally:
            session.close()
        try:
            eprint(f"{stage}: plain tritonclient loop ({warmup} warm-up, {args.requests} measured)")
            if warmup:
                plain_loop.run(level, warmup, args.timeout, None)
            progress = Progress(args.requests, what="requests", label=f"{stage}, plain")
            plain = plain_loop.run(level, args.requests, args.timeout, progress)
            progress.finish()
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
