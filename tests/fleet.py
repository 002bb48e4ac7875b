"""A fleet of real Triton servers for the tests and the fleet soak (tests/bench/bench_fleet.py):
several embedded servers on their own ports serving `fixed_cost` (20 ms per execution, one
instance: each server answers about 50 requests a second, so a run of a few hundred images is
spread over both and lasts long enough to lose a server in the middle), a folder of small
images, and a killer that SIGKILLs one server's process group once it has served some."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import cv2
import numpy as np
import tritonclient.grpc as grpcclient

from app.server.embedded import EmbeddedServer

TEST_MODELS = Path(__file__).resolve().parent / "models"
FLEET_MODEL = "fixed_cost"


@contextlib.contextmanager
def fleet(folder: Path, size: int = 2) -> Iterator[list[EmbeddedServer]]:
    """`size` servers started side by side (each serving only FLEET_MODEL), stopped at the end."""
    repository = folder / "fleet_repository"
    repository.mkdir(parents=True, exist_ok=True)
    link = repository / FLEET_MODEL
    if not link.exists():
        link.symlink_to(TEST_MODELS / FLEET_MODEL, target_is_directory=True)
    servers = [EmbeddedServer(repository, tracing=None) for _ in range(size)]
    with contextlib.ExitStack() as stack:
        with ThreadPoolExecutor(size) as pool:
            for server in pool.map(lambda s: s.start(), servers):
                stack.callback(server.stop)
        yield servers


def target(servers: list[EmbeddedServer]) -> str:
    """The fleet as one gRPC target, balanced by gRPC: ipv4:H:P,H:P."""
    return "ipv4:" + ",".join(server.grpc_url for server in servers)


def write_images(folder: Path, count: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for i in range(count):
        cv2.imwrite(str(folder / f"img_{i:05d}.png"), rng.integers(0, 255, (24, 32, 3), dtype=np.uint8))
    return folder


def inference_count(server: EmbeddedServer) -> int:
    """How many images the server's FLEET_MODEL has answered (its own statistics)."""
    client = grpcclient.InferenceServerClient(server.grpc_url)
    try:
        stats = client.get_inference_statistics(FLEET_MODEL, as_json=True, client_timeout=5)
    finally:
        client.close()
    return sum(int(m.get("inference_count", 0)) for m in stats.get("model_stats", []))


class Killer:
    """SIGKILLs `server`'s process group (the server and its backend stubs) once it has
    answered `after` images: a server of the fleet dying in the middle of a run."""

    def __init__(self, server: EmbeddedServer, after: int, others: Sequence[EmbeddedServer] = ()) -> None:
        self.server, self.after, self.others = server, after, list(others)
        self.served_before_kill = -1
        self.others_served_before_kill: list[int] = []  # what `others` had answered by then
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="fleet-killer", daemon=True)

    def __enter__(self) -> Killer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)

    @property
    def killed(self) -> bool:
        return self.served_before_kill >= 0

    def _watch(self) -> None:
        while not self._stop.wait(0.02):
            served = inference_count(self.server)
            if served >= self.after:
                assert self.server.pid is not None
                os.killpg(self.server.pid, signal.SIGKILL)
                self.served_before_kill = served
                self.others_served_before_kill = [inference_count(s) for s in self.others]
                return
