"""MLServer 1.7 (a KServe v2 server that is not Triton) started on loopback for the protocol
tests, from its own venv (setup_mlserver.sh, `make mlserver`), serving the test models of
models/: `boxes_nms` (EfficientNMS layout) and `boxes_yolo` (raw YOLOv8 layout).

`parallel_workers: 0`: under uvloop on Python 3.11 its inference-pool workers die at start
("There is no current event loop"); served in the main process instead.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from app.server.ports import free_ports

ROOT = Path(__file__).resolve().parents[2]
MODELS = Path(__file__).with_name("models")
MODEL_NAMES = ("boxes_nms", "boxes_yolo")
# Expected boxes of both models, in their 128x128 model input (x1, y1, x2, y2), class, score.
EXPECTED = {
    "boxes_nms": [([20, 30, 60, 70], 0, 0.9), ([80, 40, 120, 100], 2, 0.8)],
    "boxes_yolo": [([20, 30, 60, 70], 0, 0.9), ([80, 40, 120, 100], 1, 0.8)],
}
INPUT_SIZE = 128


@dataclass(frozen=True)
class MLServer:
    http_port: int
    grpc_port: int
    log: Path

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    @property
    def grpc_url(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"


def mlserver_python() -> Path:
    """The MLServer venv's interpreter: $MLSERVER_PYTHON, which `make test` sets to the venv it keeps in
    the machine's cache (tests/venv_cache.sh; `make -s mlserver` builds it and prints its path)."""
    named = os.environ.get("MLSERVER_PYTHON")
    if not named:
        raise RuntimeError(
            "MLSERVER_PYTHON is not set: run `make test`, or MLSERVER_PYTHON=$(make -s mlserver) pytest"
        )
    # Absolute: the server runs with its own folder as working directory.
    python = Path(named).absolute()
    if not python.is_file():
        raise RuntimeError(f"no MLServer venv at {python} ($MLSERVER_PYTHON): `make -s mlserver` builds one")
    return python


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as reply:
            return bool(reply.status == 200)
    except (urllib.error.URLError, OSError):
        return False


@contextlib.contextmanager
def running_mlserver(folder: Path, startup_timeout: float = 120.0) -> Iterator[MLServer]:
    """MLServer on 127.0.0.1 (free ports) serving the test models; stopped with its children."""
    http_port, grpc_port, metrics_port = free_ports(3)
    settings = {
        "parallel_workers": 0,
        "host": "127.0.0.1",
        "http_port": http_port,
        "grpc_port": grpc_port,
        "metrics_port": metrics_port,
    }
    (folder / "settings.json").write_text(json.dumps(settings))
    for name in MODEL_NAMES:
        (folder / name).symlink_to(MODELS / name, target_is_directory=True)
    log = folder / "mlserver.log"
    python = mlserver_python()
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(python.parent / "mlserver"), "start", str(folder)],
            cwd=folder,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: stopped whole, whatever it started
            # Its own interpreter and packages only: nothing of the product's venv leaks in.
            env={k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")},
        )
    server = MLServer(http_port, grpc_port, log)
    try:
        deadline = time.monotonic() + startup_timeout
        urls = [f"{server.http_url}/v2/models/{name}/ready" for name in MODEL_NAMES]
        while not all(_ready(url) for url in urls):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"MLServer did not start: {log.read_text(errors='replace')[-3000:]}")
            time.sleep(0.25)
        yield server
    finally:
        _stop(process)


def _stop(process: subprocess.Popen[bytes], timeout: float = 10.0) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGINT)
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
