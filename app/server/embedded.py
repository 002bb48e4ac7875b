"""The embedded Triton server: start it, wait until its models are ready, stop all of it."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

from app.model_states import ModelEntry, ModelState
from app.server.errors import ModelLoadError, ServerError
from app.server.health import is_live, repository_index
from app.server.install import TritonInstall, find_tritonserver
from app.server.lifeline import Lifeline
from app.server.ports import free_ports
from app.server.private_regions import PrivateRegions
from app.server.process_group import stop_group, wait_until_gone
from app.server.runtime import prepare_backend_dir, server_environment, shell_safe_repository
from app.server.trace_setup import TraceMode, TraceSetup, trace_file_of
from app.system.leftovers import owned_name, remove_dead_owners

LOOPBACK = "127.0.0.1"
SHM_DIR = Path("/dev/shm")
# Names of a server's /dev/shm regions and work folder: `<prefix><owner pid>-<start>-<n>...`
# (app.server.leftovers), so that a later start can remove what a killed owner left.
SHM_PREFIX = "tviewer-s"
WORKDIR_PREFIX = "triton-viewer-server-"
# Tracing available (Triton's trace file), off until a client turns it on.
DEFAULT_TRACING = TraceSetup()
# A server that crashes while starting gets one more try, on new ports (start()). Seen on a
# loaded 2-core host: tritonserver aborting (SIGABRT) before it was live, twice in ten test runs.
CRASH_LOG_LINES = 8
_log = logging.getLogger(__name__)
_ERROR_LINE = re.compile(r"^E\d{4} .*|.*(error|failed).*", re.IGNORECASE)


class CrashedWhileStarting(ServerError):
    """The server process died of a signal before it was live."""


class EmbeddedServer:
    """A real `tritonserver` child process bound to 127.0.0.1 on free ports.

    Lifecycle: created -> start() -> stop(); stop() is idempotent; usable as a
    context manager. Several can run side by side (own ports, own work folder,
    own shared-memory prefix).
    """

    def __init__(
        self,
        model_repository: str | os.PathLike[str],
        *,
        tritonserver: str | os.PathLike[str] | None = None,
        grpc_port: int | None = None,
        http_port: int | None = None,
        metrics_port: int | None = None,
        startup_timeout: float = 120.0,
        require_all_ready: bool = True,
        log_verbose: int = 0,
        model_control: str = "explicit",
        tracing: TraceSetup | None = DEFAULT_TRACING,
        extra_repositories: Sequence[str | os.PathLike[str]] = (),
    ) -> None:
        self.model_repository = Path(model_repository).resolve()
        # More model repositories served beside the first (Triton takes several): the model
        # folders the command line writes for `--model FILE` (app.inference.model_files.save).
        self.extra_repositories = tuple(Path(r).resolve() for r in extra_repositories)
        for folder in (self.model_repository, *self.extra_repositories):
            if not folder.is_dir():
                raise ServerError(f"model repository {folder} is not a folder")
        self._tritonserver = tritonserver
        self._ports = (grpc_port, http_port, metrics_port)
        self.startup_timeout = startup_timeout
        self.require_all_ready = require_all_ready
        self.log_verbose = log_verbose
        # "explicit" (every model loaded at start; load/unload allowed), or Triton's "none" /
        # "poll" (what many deployed servers run: the repository commands must say so).
        self.model_control = model_control
        # Request tracing available from the start and off (app.server.trace_setup); None: none.
        self.tracing = tracing
        self.grpc_port = self.http_port = self.metrics_port = 0
        self._process: subprocess.Popen[bytes] | None = None
        self._lifeline: Lifeline | None = None
        self._private_regions: PrivateRegions | None = None
        self._workdir: Path | None = None
        self._log_file: Path | None = None
        # Unique per server: lets stop() find (and remove) this server's own /dev/shm regions;
        # carries this process's pid: a later start removes them if this process was killed.
        self.shm_prefix = f"{owned_name(SHM_PREFIX)}_"
        self.models: list[ModelEntry] = []

    # -- addresses ---------------------------------------------------------
    @property
    def grpc_url(self) -> str:
        return f"{LOOPBACK}:{self.grpc_port}"

    @property
    def http_url(self) -> str:
        return f"{LOOPBACK}:{self.http_port}"

    @property
    def metrics_address(self) -> str:
        """HOST:PORT of its Prometheus metrics (bound on the loopback, like the others)."""
        return f"{LOOPBACK}:{self.metrics_port}"

    @property
    def metrics_url(self) -> str:
        """The URL of its Prometheus metrics page (what the Server view and `tune` read)."""
        return f"http://{self.metrics_address}/metrics"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def describe_exit(self) -> str:
        """How the server process ended, for a message: "crashed (signal SIGSEGV)", "exited
        with status 1"; "is not running" when that is not known (never started, stopped)."""
        code = self._process.poll() if self._process is not None else None
        if code is None:
            return "is not running"
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            return f"crashed ({name})" if -code != signal.SIGKILL else "was killed (SIGKILL)"
        return f"exited with status {code}"

    @property
    def workdir(self) -> Path | None:
        return self._workdir

    @property
    def trace_file(self) -> Path | None:
        """The base name of the server's trace files (PATH.0, PATH.1...), None when the server
        does not write any (no tracing, OpenTelemetry mode, not started)."""
        if self._workdir is None or self.tracing is None or self.tracing.mode is not TraceMode.FILE:
            return None
        return trace_file_of(self._workdir)

    def log_text(self) -> str:
        if self._log_file and self._log_file.exists():
            return self._log_file.read_text(errors="replace")
        return ""

    # -- lifecycle ---------------------------------------------------------
    def __enter__(self) -> EmbeddedServer:
        return self.start()

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def start(self) -> EmbeddedServer:
        if self._process is not None:
            raise ServerError("this server was already started")
        remove_leftovers_of_dead_owners()
        install = find_tritonserver(self._tritonserver)
        try:
            return self._start_once(install)
        except CrashedWhileStarting as e:
            _log.warning("%s; starting it again", e)
        return self._start_once(install)  # a second crash is raised

    def _start_once(self, install: TritonInstall) -> EmbeddedServer:
        """Spawn it in a new work folder and wait until it is ready; on failure, stopped."""
        self._workdir = Path(tempfile.mkdtemp(prefix=f"{owned_name(WORKDIR_PREFIX)}-"))
        try:
            self._spawn(install)
            self._wait_until_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _command(self, install: TritonInstall, backends: Path) -> list[str]:
        return [
            str(install.binary),
            f"--model-repository={shell_safe_repository(self.model_repository, backends.parent)}",
            *(
                f"--model-repository={shell_safe_repository(extra, backends.parent, f'model_repository_{k}')}"
                for k, extra in enumerate(self.extra_repositories, 1)
            ),
            f"--backend-directory={backends}",
            f"--grpc-address={LOOPBACK}",
            f"--grpc-port={self.grpc_port}",
            f"--http-address={LOOPBACK}",
            f"--http-port={self.http_port}",
            f"--metrics-address={LOOPBACK}",
            f"--metrics-port={self.metrics_port}",
            "--allow-gpu-metrics=false",
            *self._model_control_options(),
            # We report unloadable models ourselves, with their names and reasons.
            "--exit-on-error=false",
            "--strict-readiness=false",
            "--exit-timeout-secs=5",
            f"--log-verbose={self.log_verbose}",
            f"--backend-config=python,shm-region-prefix-name={self.shm_prefix}",
            # Room for a few full-HD frames per stub without growing the region request by request.
            "--backend-config=python,shm-default-byte-size=16777216",
            "--backend-config=python,shm-growth-byte-size=16777216",
            *(self.tracing.arguments(self._workdir) if self.tracing and self._workdir else []),
        ]

    def _model_control_options(self) -> list[str]:
        if self.model_control != "explicit":
            return [f"--model-control-mode={self.model_control}"]
        # Explicit control with every model loaded at start: the same models as the default
        # mode would serve, and load/unload (the repository command, tune) work on it. The
        # server becomes live once the startup loads are done; the index then lists each
        # model READY or UNAVAILABLE with its reason, as before.
        return ["--model-control-mode=explicit", "--load-model=*"]

    def _spawn(self, install: TritonInstall) -> None:
        assert self._workdir is not None
        backends = prepare_backend_dir(install, self._workdir)
        if self.tracing is not None:
            self.tracing.prepare(self._workdir)
        wanted = [p for p in self._ports]
        picked = iter(free_ports(sum(1 for p in wanted if not p)))
        self.grpc_port, self.http_port, self.metrics_port = (p or next(picked) for p in wanted)
        self._log_file = self._workdir / "tritonserver.log"
        # The group dies with this process however it ends (see app.server.lifeline).
        lifeline = Lifeline()
        try:
            with open(self._log_file, "wb") as log:
                # Own session = own process group: stop() signals the server and the
                # Python-backend stubs it forked, all at once.
                process = subprocess.Popen(
                    lifeline.command(self._command(install, backends)),
                    stdin=lifeline.child_stdin,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=server_environment(install),
                    cwd=self._workdir,
                    start_new_session=True,
                )
        except BaseException:
            lifeline.cut()
            raise
        lifeline.child_started()
        self._process, self._lifeline = process, lifeline
        # The Python backend's regions carry the inputs' pixels: 0600, as the client's are.
        self._private_regions = PrivateRegions(SHM_DIR, self.shm_prefix).start()

    def _wait_until_ready(self) -> None:
        assert self._process is not None
        deadline = time.monotonic() + self.startup_timeout
        while not is_live(self.http_url, timeout=0.5):
            if (code := self._process.poll()) is not None:
                if code < 0:  # a crash, not a refusal (bad option, port taken): worth a retry
                    tail = "\n  ".join(self.log_text().strip().splitlines()[-CRASH_LOG_LINES:])
                    raise CrashedWhileStarting(
                        f"tritonserver {self.describe_exit()} while starting; its log ends:\n  {tail}"
                    )
                raise ServerError(
                    f"tritonserver exited with status {code} while starting: {self._last_error_line()}"
                )
            if time.monotonic() > deadline:
                raise ServerError(
                    f"tritonserver did not become live within {self.startup_timeout:.0f} s: "
                    f"{self._last_error_line()}"
                )
            time.sleep(0.1)
        while True:
            self.models = repository_index(self.http_url)
            pending = [m for m in self.models if m.state not in (ModelState.READY, ModelState.UNAVAILABLE)]
            if not pending:
                break
            if time.monotonic() > deadline:
                names = ", ".join(m.name for m in pending)
                raise ServerError(f"models still loading after {self.startup_timeout:.0f} s: {names}")
            time.sleep(0.1)
        failed = {m.name: m.reason for m in self.models if not m.ready}
        if failed and self.require_all_ready:
            detail = "; ".join(
                f"model '{n}' failed to load: {r or self._log_error_for(n)}" for n, r in failed.items()
            )
            raise ModelLoadError(detail, failed)

    def _log_error_for(self, model: str) -> str:
        lines = [ln for ln in self.log_text().splitlines() if model in ln and _ERROR_LINE.match(ln)]
        return lines[-1].strip() if lines else "no reason given (see the server log)"

    def _last_error_line(self) -> str:
        lines = [ln.strip() for ln in self.log_text().splitlines() if _ERROR_LINE.match(ln)]
        if lines:
            return lines[-1]
        tail = self.log_text().strip().splitlines()
        return tail[-1] if tail else "(no output)"

    def stop(self, timeout: float = 8.0) -> None:
        """SIGINT the whole group, wait up to `timeout` (0: kill at once), then SIGKILL what is
        left; remove its shared-memory regions and work folder. Idempotent."""
        proc, self._process = self._process, None
        guard, self._private_regions = self._private_regions, None
        if guard is not None:
            guard.stop()
        if proc is not None:
            stop_group(proc, grace_s=timeout)
        lifeline, self._lifeline = self._lifeline, None
        if lifeline is not None:
            # After the graceful stop, never before: this SIGKILLs whatever is left of the
            # group (the watcher; the stubs too if the server had died on its own).
            lifeline.cut()
            if proc is not None:
                wait_until_gone(proc.pid)
        for region in SHM_DIR.glob(f"{self.shm_prefix}*"):
            with contextlib.suppress(OSError):
                region.unlink()
        if self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None
            self._log_file = None


def remove_leftovers_of_dead_owners() -> list[Path]:
    """The /dev/shm regions and work folders of servers whose owner process was killed."""
    return [
        *remove_dead_owners(SHM_DIR, SHM_PREFIX),
        *remove_dead_owners(Path(tempfile.gettempdir()), WORKDIR_PREFIX),
    ]
