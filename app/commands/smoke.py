"""`triton-viewer --smoke-test [--url HOST:PORT]`: does this build really work?

Imports everything the viewer needs (Qt offscreen, OpenCV, tritonclient gRPC,
qasync, the app's windows), checks gRPC's TLS roots, connects and runs one real
inference on the bundled sample image. Prints the JSONL record of that result
and "smoke test passed" (exit 0), or names the step that failed and why on
stderr (exit 1). Made for frozen builds: only running them finds missing
hidden imports.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import pkgutil
import sys
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any, TypeVar

from app.commands.arguments import path_argument  # argparse only: no import to check here

T = TypeVar("T")


class StepFailed(Exception):
    def __init__(self, step: str, cause: BaseException | str) -> None:
        detail = cause if isinstance(cause, str) else f"{type(cause).__name__}: {cause}"
        super().__init__(f"{step}: {detail}")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--url",
        default=None,
        help="gRPC address HOST:PORT of a Triton server (default: start the embedded one, if it can run)",
    )
    p.add_argument("--model", default=None, help="model to use (default: the server's only/first detector)")
    p.add_argument(
        "--image", type=path_argument, default=None, help="image to send (default: the bundled sample)"
    )
    p.add_argument("--timeout", type=float, default=30.0, help="seconds for the inference (default 30)")


def _step(name: str, action: Callable[[], T]) -> T:
    print(f"smoke: {name} ...", file=sys.stderr, flush=True)
    try:
        return action()
    except StepFailed:
        raise
    except BaseException as e:  # anything, including SystemExit from a broken import
        raise StepFailed(name, e) from e


def _import_all(package: str) -> list[str]:
    """Imports the package and every module in it; a broken one fails the step with its name."""
    root = importlib.import_module(package)
    names = [package]
    for info in pkgutil.iter_modules(root.__path__, prefix=f"{package}."):
        importlib.import_module(info.name)
        names.append(info.name)
    if len(names) == 1:
        raise RuntimeError(f"no modules found in {package} (not collected into this build?)")
    print(f"smoke: imported {len(names)} modules of {package}", file=sys.stderr, flush=True)
    return names


def _qt_offscreen() -> Any:
    # Forced, not setdefault: a smoke test must not depend on a display being there.
    os.environ["QT_QPA_PLATFORM"] = "offscreen"
    from PySide6.QtGui import QGuiApplication
    from PySide6.QtWidgets import QApplication, QLabel

    app = QApplication.instance() or QApplication([sys.argv[0]])
    label = QLabel("triton-viewer smoke test")
    label.resize(200, 40)
    label.show()
    app.processEvents()
    platform = QGuiApplication.platformName()
    if label.width() <= 0 or platform != "offscreen":
        raise RuntimeError(f"widget not shown (platform {platform!r})")
    label.close()
    return app


def _qasync(app: Any) -> None:
    # After PySide6: qasync binds to the first Qt binding already imported.
    import qasync

    loop = qasync.QEventLoop(app)
    try:
        if loop.run_until_complete(asyncio.sleep(0, result=42)) != 42:
            raise RuntimeError("the qasync loop did not run a coroutine")
    finally:
        loop.close()


def _grpc_roots() -> str:
    import grpc

    pem = Path(grpc.__file__).parent / "_cython" / "_credentials" / "roots.pem"
    text = pem.read_text(encoding="ascii")
    if "BEGIN CERTIFICATE" not in text:
        raise RuntimeError(f"{pem} holds no certificate")
    return str(pem)


def _tritonclient() -> None:
    # tritonclient.grpc's __init__ turns any missing module into "installation does not
    # include grpc support": import its inner modules directly first to name the real one.
    for name in ("grpc", "google.protobuf", "tritonclient.grpc.service_pb2", "tritonclient.grpc._client"):
        importlib.import_module(name)
    importlib.import_module("tritonclient.grpc")


def _tritonclient_http() -> None:
    # The same misleading "installation does not include http support" for any missing module
    # (gevent, geventhttpclient, aiohttp, rapidjson): import them first to name the real one.
    for name in ("aiohttp", "rapidjson", "geventhttpclient", "tritonclient.http._client"):
        importlib.import_module(name)
    importlib.import_module("tritonclient.http.aio")
    importlib.import_module("app.inference.transports.http_channel")


def _read_sample(image: str | None) -> tuple[Path, Any]:
    from app.resources import sample_image
    from app.sources.images import read_image

    path = Path(image) if image else sample_image()
    return path, read_image(path)


def _embedded_url(stack: ExitStack) -> str:
    from app.pipeline.connection.local_server import LocalServer
    from app.server.availability import embedded_available

    ok, reason = embedded_available()
    if not ok:
        raise StepFailed("embedded server", f"not available: {reason}")
    local = LocalServer()
    stack.callback(local.stop, 8.0)  # a graceful stop, then SIGKILL
    url = local.ensure()
    print(f"smoke: embedded server at {url}", file=sys.stderr, flush=True)
    return url


def _infer(url: str, model: str | None, path: Path, image: Any, timeout: float) -> dict[str, Any]:
    from app.inference.core.open_session import open_session
    from app.inference.core.spec import SessionSpec, Timeouts
    from app.inference.errors import SessionError
    from app.inference.protocol import parse_endpoints

    try:
        spec = SessionSpec(parse_endpoints(url), model=model, timeouts=Timeouts(timeout, retries=0))
        session = open_session(spec)
    except SessionError as e:
        raise StepFailed(f"connect to {url}", str(e)) from e
    try:
        result = _step("inference", lambda: session.infer(image, source=str(path)))
    finally:
        session.close()
    if not result.ok:
        raise StepFailed("inference", result.error or str(result.status))
    print(f"smoke: model {result.model} on {url}", file=sys.stderr, flush=True)
    return result.to_record()


def run(args: argparse.Namespace) -> int:
    try:
        with ExitStack() as stack:
            app = _step("Qt widgets (offscreen)", _qt_offscreen)
            _step("import numpy", lambda: importlib.import_module("numpy"))
            _step("import cv2", lambda: importlib.import_module("cv2").__version__)
            _step("import tritonclient.grpc", _tritonclient)
            _step("import tritonclient.http (the HTTP/REST protocol)", _tritonclient_http)
            _step("qasync event loop", lambda: _qasync(app))
            _step("import the app's widgets (app.ui.*)", lambda: _import_all("app.ui"))
            _step("import app.commands.gui", lambda: importlib.import_module("app.commands.gui"))
            # `evaluate` and faster-coco-eval's C++ extension (imported only when it runs).
            _step("import the evaluation (app.evaluation.*)", lambda: _import_all("app.evaluation"))
            _step("gRPC TLS roots (roots.pem)", _grpc_roots)
            path, image = _step("read the sample image", lambda: _read_sample(args.image))
            url = args.url or _step("start the embedded server", lambda: _embedded_url(stack))
            record = _infer(url, args.model, path, image, args.timeout)
    except StepFailed as e:
        print(f"smoke test FAILED at {e}", file=sys.stderr, flush=True)
        return 1
    print(json.dumps(record), flush=True)
    print("smoke test passed", flush=True)
    return 0
