"""What the headless commands (models, infer, bench, compare) share: their options as one
SessionSpec, and "no --url: run the embedded server for the duration of the command"."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import math
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol

from app.commands.arguments import path_argument
from app.commands.headers import HEADERS_ENV, HeaderError, collect_headers
from app.inference.core.session import TritonSession
from app.inference.core.spec import (
    MAX_REQUEST_TIMEOUT_S,
    Delivery,
    Limits,
    ProfileSource,
    SessionSpec,
    Timeouts,
)
from app.inference.decoding.labels import blank_label_ids, read_labels_file
from app.inference.profiles.profile import ProfileError, load_profile_file
from app.inference.protocol import Endpoint, MixedProtocolsError, UrlError, parse_endpoints, parse_url
from app.inference.redaction import redact
from app.inference.result import strict_json
from app.inference.transports.channel import ConnectionOptions
from app.inference.transports.transport import TransportKind

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
# Each request in flight holds its input tensor (a full frame for raw-image models): beyond
# a few hundred, memory grows while throughput does not (the server has as many slots).
MAX_CONCURRENCY = 256


# On a small machine (the embedded server on the same 2 cores) every extra client thread
# takes CPU from the server: measured with tests/bench/bench_infer_vs_plain.py, one gRPC
# channel, one decode worker and reading in the main thread were ~5% faster there than
# 2 / 2 / a reader pool. Bigger machines get the parallel settings.
SMALL_MACHINE = (os.cpu_count() or 2) <= 2
CHANNELS_PER_SERVER = 1 if SMALL_MACHINE else 2
DECODE_WORKERS = 1 if SMALL_MACHINE else 2


class UsageError(Exception):
    """A bad option or an unusable server/model: message on stderr, exit status 2."""


class LineSink(Protocol):
    """Where records go: stdout, or a LineFile (app.system.atomic_files)."""

    def write(self, text: str, /) -> Any: ...
    def flush(self) -> Any: ...


def eprint(*parts: object) -> None:
    # A closed terminal (SIGHUP) makes stderr fail with EIO: a message is not worth dying for.
    # Everything on stderr may carry a server's or an exception's text: no secret in it.
    with contextlib.suppress(OSError, ValueError):
        print(redact(" ".join(str(p) for p in parts)), file=sys.stderr, flush=True)


_SAID: set[str] = set()  # notes already said by this process (each plain sentence once)


def say_once(note: str) -> None:
    """`note: ...` on stderr, unless this process has said it already (a server's missing
    extensions are named once, however many sessions meet them)."""
    if note and note not in _SAID:
        _SAID.add(note)
        eprint(f"note: {note}")


def warn_once(warning: str) -> None:
    """`warning: ...` on stderr, once per process (the options are read once per session)."""
    if warning and ("warning: " + warning) not in _SAID:
        _SAID.add("warning: " + warning)
        eprint(f"warning: {warning}")


def tell_session(session: TritonSession) -> None:
    """How requests travel and what the server lacks of Triton's extensions (once each)."""
    eprint(f"transport: {session.describe_transport()}")
    say_once(session.transport_note)
    for note in session.notes:
        say_once(note)


def write_summary(
    out: LineSink,
    summary: dict[str, Any],
    broken: str | None,
    describe: Callable[[BaseException], str] | None = None,
) -> str | None:
    """The summary line, last (`out`: stdout or a LineFile); returns why the output is broken
    (`broken`: an earlier reason, e.g. an export that could not be written), if it is, after
    saying so on stderr. `describe(error)`: the reason for a failed write."""
    try:
        out.write(strict_json({"summary": summary}) + "\n")
        out.flush()
    except (OSError, ValueError) as e:
        broken = broken or (describe(e) if describe is not None else f"cannot write the output: {e}")
    if broken:
        eprint(f"error: {broken}")
    return broken


def concurrency_argument(text: str) -> int:
    """--concurrency N: an integer from 1 to MAX_CONCURRENCY (argparse type)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if not 1 <= value <= MAX_CONCURRENCY:
        raise argparse.ArgumentTypeError(
            f"{value} is out of range: from 1 to {MAX_CONCURRENCY} requests in flight (more holds "
            "more frames in memory without making a server faster)"
        )
    return value


def timeout_argument(text: str) -> float:
    """--timeout SECONDS: a finite positive number (argparse type); above a day it is cut to a
    day, and the user is told."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, not {text}")
    if value > MAX_REQUEST_TIMEOUT_S:
        eprint(f"note: --timeout {text}: {MAX_REQUEST_TIMEOUT_S:.0f} s (a day) is used, the longest timeout")
        return MAX_REQUEST_TIMEOUT_S
    return value


def add_connection_arguments(p: argparse.ArgumentParser, *, repeatable_url: bool = True) -> None:
    if repeatable_url:
        p.add_argument(
            "--url",
            action="append",
            default=[],
            metavar="URL",
            help="server address: HOST:PORT or grpc://HOST:PORT (gRPC), http://HOST:PORT or "
            "https://HOST:PORT (HTTP/REST); Triton or any KServe v2 server (repeatable: requests "
            "go to the least-loaded server). Default: start the embedded server with the bundled "
            "models",
        )
    else:
        p.add_argument(
            "--url",
            default=None,
            metavar="URL",
            help="server address: HOST:PORT or grpc://HOST:PORT (gRPC), http://HOST:PORT or "
            "https://HOST:PORT (HTTP/REST). Default: start the embedded server with the bundled "
            "models",
        )
    p.add_argument(
        "--timeout", type=timeout_argument, default=10.0, metavar="SECONDS", help="per-request timeout"
    )
    add_security_arguments(p)


def add_security_arguments(p: argparse.ArgumentParser) -> None:
    """TLS and metadata for remote servers (the command-line tools and the viewer)."""
    p.add_argument("--ssl", action="store_true", help="TLS connection to the server")
    p.add_argument(
        "--root-certificates",
        type=path_argument,
        default=None,
        metavar="FILE",
        help="PEM CA bundle for --ssl",
    )
    p.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="gRPC metadata or HTTP header sent with every call (repeatable; values are never "
        "printed; a key ending in -bin takes a base64 value, sent as bytes over gRPC and as that "
        f"base64 text over HTTP). Also read from --header-file and {HEADERS_ENV}",
    )
    p.add_argument(
        "--header-file",
        type=path_argument,
        default=None,
        metavar="FILE",
        help="KEY=VALUE lines of gRPC metadata / HTTP headers (tokens kept out of the process list)",
    )


def add_speed_arguments(p: argparse.ArgumentParser, *, remembered: bool = False) -> None:
    """How requests travel: --transport, --client-batch, --batch-delay-ms (infer, viewer).
    `remembered`: the defaults are None, meaning "what the viewer's settings say"."""
    p.add_argument(
        "--transport",
        choices=[k.value for k in TransportKind],
        default=None if remembered else TransportKind.AUTO.value,
        help="auto (default): Triton system shared memory when the server is on this machine "
        "and has it, else the tensors inside the messages; grpc: tensors inside the messages "
        "(gRPC or HTTP, as --url says); shm: shared memory (falls back to the messages with a "
        "note when the server cannot use it)",
    )
    p.add_argument(
        "--client-batch",
        type=int_range("--client-batch", 1, 256),
        default=None if remembered else 1,
        metavar="N",
        help="client-side batching: up to N images of the same size in one request, for models "
        "with max_batch_size > 0 (default 1: off)",
    )
    p.add_argument(
        "--batch-delay-ms",
        type=float_range("--batch-delay-ms", 0.0, 1000.0),
        default=2.0,
        metavar="T",
        help="with --client-batch: wait at most T ms for a batch to fill (default 2)",
    )


def int_range(name: str, low: int, high: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value} is out of range ({low} to {high})")
        return value

    parse.__name__ = name
    return parse


def float_range(name: str, low: float, high: float) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if not (math.isfinite(value) and low <= value <= high):
            raise argparse.ArgumentTypeError(f"{text} is out of range ({low:g} to {high:g})")
        return value

    parse.__name__ = name
    return parse


def delivery_of(args: argparse.Namespace) -> Delivery:
    """add_speed_arguments' options (--transport, --client-batch, --batch-delay-ms)."""
    return Delivery(TransportKind(args.transport), args.client_batch, args.batch_delay_ms)


def add_model_arguments(p: argparse.ArgumentParser, *, profile: bool = True) -> None:
    p.add_argument("--model", default=None, help="model name (default: face_detector, or the only one ready)")
    if profile:
        add_profile_arguments(p)


def add_profile_arguments(p: argparse.ArgumentParser) -> None:
    """--profile FILE and --labels FILE: what the model's own description leaves out."""
    p.add_argument("--profile", type=path_argument, metavar="FILE", help="TOML profile overriding detection")
    p.add_argument("--labels", type=path_argument, metavar="FILE", help="class names, one per line")


def add_threshold_arguments(p: argparse.ArgumentParser) -> None:
    """--score S and --iou I (Ultralytics' conf and iou): the profile's thresholds overridden."""
    p.add_argument(
        "--score",
        type=float_range("--score", 0.0, 1.0),
        default=None,
        metavar="S",
        help="score threshold: detections scoring below S are dropped (0..1; default: the profile's, "
        "0.25 for most models)",
    )
    p.add_argument(
        "--iou",
        type=float_range("--iou", 0.0, 1.0),
        default=None,
        metavar="I",
        help="non-maximum suppression: a box overlapping a better one of its class by IoU above I "
        "is dropped (0..1; default: the profile's, 0.7 for Ultralytics exports, else 0.45)",
    )


def endpoints_of(args: argparse.Namespace, dest: str = "url") -> tuple[Endpoint, ...]:
    """--url (or the option stored in `dest`, e.g. compare's --url-b) parsed, once, here
    (UsageError for one that cannot be a server's address, or for servers of both protocols
    at once)."""
    value = getattr(args, dest, None)
    if not value:
        return ()
    option = "--" + dest.replace("_", "-")
    try:
        return parse_endpoints(value)
    except MixedProtocolsError as e:
        raise UsageError(f"{option}: {e}") from None
    except UrlError as e:
        raise UsageError(f"{option} {e}") from None


def connection_options(args: argparse.Namespace) -> ConnectionOptions:
    try:
        headers = collect_headers(getattr(args, "header", None) or [], getattr(args, "header_file", None))
    except HeaderError as e:
        raise UsageError(str(e)) from None
    root = getattr(args, "root_certificates", None)
    if root is not None and not Path(root).is_file():
        raise UsageError(f"--root-certificates {root}: no such file")
    return ConnectionOptions(
        ssl=bool(getattr(args, "ssl", False)),
        root_certificates=root,
        headers=headers,
        channels_per_server=CHANNELS_PER_SERVER,
    )


def profile_overrides(args: argparse.Namespace) -> dict[str, Any] | None:
    """--profile FILE, --labels FILE, --score and --iou as ModelProfile overrides (the labels
    file and the thresholds given on the command line win over the file's)."""
    overrides: dict[str, Any] = {}
    try:
        if getattr(args, "profile", None):
            overrides.update(load_profile_file(args.profile))
        if getattr(args, "labels", None):
            overrides["labels"] = read_labels_file(args.labels)
    except (ProfileError, ValueError) as e:
        raise UsageError(str(e)) from None
    blank = blank_label_ids(overrides.get("labels") or ())
    if blank:
        source = f"--labels {args.labels}" if getattr(args, "labels", None) else f"--profile {args.profile}"
        ids = ", ".join(str(i) for i in blank[:10]) + (" …" if len(blank) > 10 else "")
        warn_once(
            f"{source}: {len(blank)} empty name(s) (blank lines before the last name): class id(s) {ids} "
            "have no name (shown as 'class N'); the later names keep their line's position"
        )
    for option, field in (("score", "score_threshold"), ("iou", "iou_threshold")):
        value = getattr(args, option, None)
        if isinstance(value, float):  # compare's matching IoU is --match-iou, never this
            overrides[field] = value
    return overrides or None


def session_spec(args: argparse.Namespace, *, delivery: Delivery | None = None) -> SessionSpec:
    """The one place the command line turns its options into a SessionSpec (UsageError for a
    bad one): --url (none: the embedded server, see `serving`), --model, --profile/--labels,
    --timeout, TLS and headers, --concurrency; `delivery`: how requests travel, for the
    commands that choose it. The command line's own thread feeds and may block."""
    model = getattr(args, "model", None)
    concurrency = getattr(args, "concurrency", None)
    return SessionSpec(
        endpoints=endpoints_of(args),
        model=model if isinstance(model, str) else None,  # compare names one per side
        profile=ProfileSource(overrides=profile_overrides(args)),
        delivery=delivery or Delivery(),
        timeouts=Timeouts(request_s=getattr(args, "timeout", Timeouts.request_s)),
        connection=connection_options(args),
        limits=Limits(
            # bench's --concurrency is a list of levels: its sweep sizes each session.
            max_in_flight=concurrency if isinstance(concurrency, int) else Limits.max_in_flight,
            decode_workers=DECODE_WORKERS,
            send_in_caller=True,
        ),
    )


SERVER_STOP_S = 8.0  # the embedded server's graceful stop (SIGINT), then SIGKILL


@contextlib.contextmanager
def serving(spec: SessionSpec) -> Iterator[SessionSpec]:
    """`spec` as it is when it names servers; else with the address of an embedded server
    started now, supervised (started again on the same address if it dies, within its
    restart budget) and stopped (with every child) when the block ends, whatever happens."""
    if not spec.embedded:
        yield spec
        return
    # Imported here: `--url` users never pay for the server modules.
    from app.pipeline.connection.local_server import LocalServer
    from app.pipeline.connection.supervisor import ServerSupervisor
    from app.server.errors import ServerError

    # keep_ports: should it be started again after a crash, the sessions keep its address.
    local = LocalServer(keep_ports=True)
    eprint("no --url: starting the embedded Triton server ...")
    try:
        url = local.ensure()
    except ServerError as e:
        local.stop()
        raise UsageError(f"cannot start the embedded Triton server: {e}") from None
    except BaseException:
        local.stop()
        raise
    eprint(f"embedded server ready at {url}")
    # Started again on the same address if it dies (within its restart budget): requests
    # in flight retry until their deadlines meanwhile.
    supervisor = ServerSupervisor(local, lambda text: eprint(f"note: {text}")).start()
    try:
        yield dataclasses.replace(spec, endpoints=(parse_url(url),), metrics_url=local.metrics_address)
    finally:
        supervisor.stop()
        local.stop(timeout=SERVER_STOP_S)
