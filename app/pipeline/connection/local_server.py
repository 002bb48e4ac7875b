"""LocalServer: the embedded Triton the app runs when no server URL is given (the viewer's
connection and every command-line command): started on first use, started again after it
died (within a `RestartBudget`, counted by the caller), stopped once with every child.

Threads: `ensure()` blocks (starting takes seconds) and runs on a worker thread; one start
at a time (a second caller waits and gets the same server). `stop()` may come from any
other thread, also while a start is in progress: the starting server is stopped too.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable

from app.pipeline.connection.restart_budget import RestartBudget
from app.resources import model_repository
from app.server.embedded import EmbeddedServer
from app.server.errors import ServerError

log = logging.getLogger(__name__)

ServerFactory = Callable[..., EmbeddedServer]


class LocalServerStopped(ServerError):
    """ensure() after (or during) stop(): the owner is closing."""


class LocalServer:
    def __init__(
        self,
        repository: str | os.PathLike[str] | None = None,
        *,
        tritonserver: str | None = None,
        budget: RestartBudget | None = None,
        keep_ports: bool = False,
        ports: dict[str, int | None] | None = None,
        factory: ServerFactory = EmbeddedServer,
        extra_repositories: tuple[str | os.PathLike[str], ...] = (),
    ) -> None:
        """`keep_ports`: a server started again takes the first one's ports (the command
        line: its sessions keep the address). Otherwise fresh free ports (the viewer
        rebuilds its session on the new address). `ports`: grpc_port, http_port,
        metrics_port to start on (None or absent: a free one)."""
        self._repository = repository
        # Served beside `repository` (a restarted server serves them again): `--model FILE`.
        self._extra = {"extra_repositories": extra_repositories} if extra_repositories else {}
        self._tritonserver = tritonserver
        self.budget = budget or RestartBudget()
        self._keep_ports = keep_ports
        self._factory = factory
        self._lock = threading.Lock()  # the fields below
        self._start_lock = threading.Lock()  # one start at a time
        self._server: EmbeddedServer | None = None
        self._starting = False
        self._stopped = False
        self._ports: dict[str, int] = {k: v for k, v in (ports or {}).items() if v}

    # -- state (any thread) ----------------------------------------------------------------
    @property
    def server(self) -> EmbeddedServer | None:
        return self._server

    @property
    def running(self) -> bool:
        server = self._server
        return server is not None and server.running

    @property
    def url(self) -> str | None:
        """The gRPC address of the running server, else None."""
        server = self._server
        return server.grpc_url if server is not None and server.running else None

    @property
    def metrics_address(self) -> str | None:
        """The running server's Prometheus metrics address (HOST:PORT), else None."""
        server = self._server
        return server.metrics_address if server is not None and server.running else None

    @property
    def died(self) -> bool:
        """It was started and is not running any more (crash, OOM killer, killed by hand),
        and nobody asked it to stop or is starting it again."""
        with self._lock:
            server = self._server
            return server is not None and not self._starting and not self._stopped and not server.running

    @property
    def stopped(self) -> bool:
        return self._stopped

    @property
    def keeps_address(self) -> bool:
        """A restart comes back on the same address (sessions made for it keep working)."""
        return self._keep_ports

    # -- lifecycle ---------------------------------------------------------------------------
    def ensure(self) -> str:
        """The running server's gRPC address, starting it first when it is not running (what
        a dead one left is removed first). Blocking. Raises TritonNotFoundError (it cannot run
        here at all), ServerError (it did not start) or LocalServerStopped."""
        with self._start_lock:
            with self._lock:
                self._check_not_stopped()
                dead = self._server
                if dead is not None and dead.running:
                    return dead.grpc_url
                self._starting = True
            try:
                if dead is not None:
                    dead.stop(0.0)  # it died: remove what it left (regions, work folder)
                return self._start()
            finally:
                with self._lock:
                    self._starting = False

    def _start(self) -> str:
        server = self._factory(
            self._repository if self._repository is not None else model_repository(),
            tritonserver=self._tritonserver,
            **self._ports,
            **self._extra,
        )
        with self._lock:
            self._check_not_stopped()
            self._server = server
        try:
            server.start()
        finally:
            # A stop() during the start stopped `server` from its thread; stop again here so
            # a process spawned after that stop does not outlive the owner.
            if self._stopped:
                server.stop(timeout=2.0)
        self._check_not_stopped()
        if self._keep_ports:
            self._ports = {
                "grpc_port": server.grpc_port,
                "http_port": server.http_port,
                "metrics_port": server.metrics_port,
            }
        return server.grpc_url

    def _check_not_stopped(self) -> None:
        if self._stopped:
            raise LocalServerStopped("the embedded server was stopped")

    def stop(self, timeout: float = 0.0) -> None:
        """Stop it (and every child) for good; idempotent, any thread. `timeout` 0: kill the
        process group at once (the viewer keeps nothing in it and must exit within about a
        second; Triton's graceful exit takes ~4 s here)."""
        with self._lock:
            self._stopped = True
            server = self._server
        if server is not None:
            server.stop(timeout=timeout)

    def __enter__(self) -> LocalServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- after a crash -------------------------------------------------------------------------
    def claim_restart(self) -> bool | None:
        """None: it did not die (running, stopped on purpose, or being started). Else whether
        it may be started again: True counts one restart of the budget (the caller then calls
        `ensure()`, with `keep_ports` on the same address); False: the budget is spent."""
        if not self.died:
            return None
        return self.budget.take()
