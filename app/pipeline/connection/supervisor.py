"""ServerSupervisor: the embedded server started again when it dies, for the commands that run
one (`serve`, and `infer`/`compare`/`bench`/`evaluate`/`tune`/`models` without --url). The viewer's
ConnectionManager does the same from its health probes.

Why a thread of its own: the command's main thread feeds requests (and may block in a full
window), so a death must be noticed elsewhere. It polls `LocalServer.claim_restart()` a few
times a second (cheap: a `poll()` of the child) and restarts on the same ports (`keep_ports`),
within the server's `RestartBudget` (3 in 5 minutes): the sessions keep their address, their
requests fail over to retries until each one's deadline, and shared-memory regions are
registered again on the new server. Beyond the budget it stops trying and says so.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from app.pipeline.connection.local_server import LocalServer, LocalServerStopped
from app.system.periodic import Periodic

log = logging.getLogger(__name__)

POLL_INTERVAL_S = 0.2


class ServerSupervisor:
    """`start()` once the server runs; `stop()` (idempotent) before stopping the server.
    `say(text)` is called from the supervisor's thread with each event, for the user."""

    def __init__(
        self, local: LocalServer, say: Callable[[str], None], interval_s: float = POLL_INTERVAL_S
    ) -> None:
        self.local = local
        self._say = say
        # A restart in progress is interrupted by the LocalServer's own stop (the owner's next
        # step after stop()); a look ends at once.
        self._periodic = Periodic(self._look, interval_s, "server-supervisor", join_s=2 * interval_s + 1.0)
        self.restarts = 0  # restarts done
        self.gave_up = False  # the budget was spent: the server stays down
        self._over = threading.Event()  # supervision ended (gave up, or stopped)

    def start(self) -> ServerSupervisor:
        self._periodic.start()
        return self

    def stop(self) -> None:
        self._periodic.stop()
        self._over.set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the supervision is over (the budget spent, or `stop()`); False if
        `timeout` passed first. In the main thread, Ctrl-C (or SIGTERM made an interrupt)
        still interrupts it."""
        return self._over.wait(timeout)

    def __enter__(self) -> ServerSupervisor:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _look(self) -> bool:
        try:
            go_on = self._check()
        except Exception:  # never let a surprise end the supervision silently
            log.exception("server supervision failed")
            return True
        if not go_on:
            self._over.set()
        return go_on

    def _check(self) -> bool:
        """One look; False when supervision is over (stopped, or the budget is spent)."""
        dead = self.local.server
        allowed = self.local.claim_restart()
        if allowed is None:
            return True
        budget = self.local.budget
        how = dead.describe_exit() if dead is not None else "stopped"
        if not allowed:
            self.gave_up = True
            self._say(
                f"the embedded Triton server {how} again ({budget.describe_exhausted()}); it is not "
                "restarted any more: the requests left fail (`python -m app serve` shows its own errors)"
            )
            return False
        self._say(f"the embedded Triton server {how}; restarting it ({budget.describe_use()})")
        try:
            url = self.local.ensure()
        except LocalServerStopped:
            return False
        except Exception as e:  # it did not start: the next look sees it dead and decides again
            self._say(f"the embedded Triton server did not start again: {e}")
            return not self._periodic.stopping
        self.restarts += 1
        self._say(f"the embedded Triton server runs again at {url}; requests in flight are retried")
        return True
