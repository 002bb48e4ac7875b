"""What the connection does next, decided by state and `ErrorKind` (never by message text).
Pure functions: the manager applies them, unit tests pin them down."""

from __future__ import annotations

import enum

from app.inference.result import ErrorKind
from app.pipeline.connection.state import ConnectionState

HEALTH_INTERVAL_S = 2.0
# While disconnected the probe looks more often: a server that is back is reconnected to
# within about this long of being ready (plus opening the session).
RECOVERY_INTERVAL_S = 0.5

# A reconnect after an outage that fails with one of these: the server is back but not
# ready yet (models still loading), or gone again; the probe goes on.
NOT_READY_YET = frozenset({ErrorKind.UNREACHABLE, ErrorKind.NOT_FOUND, ErrorKind.TIMEOUT})


class AfterFailedConnect(enum.Enum):
    OPEN_DEFAULT_MODEL = "open the server's default model"  # a remembered model it lacks
    KEEP_PROBING = "stay disconnected and keep probing"
    FAIL = "fail (the user decides)"


def after_failed_connect(kind: ErrorKind, *, automatic: bool, model_is_hint: bool) -> AfterFailedConnect:
    """`automatic`: a reconnect after an outage (not asked for by the user). `model_is_hint`:
    the model was remembered, not asked for."""
    if model_is_hint and kind is ErrorKind.NOT_FOUND:
        return AfterFailedConnect.OPEN_DEFAULT_MODEL
    if automatic and kind in NOT_READY_YET:
        return AfterFailedConnect.KEEP_PROBING
    return AfterFailedConnect.FAIL


class AfterProbe(enum.Enum):
    NOTHING = "nothing"
    LOST = "the server stopped answering"
    BACK = "the server answers again"


def after_probe(state: ConnectionState, live: bool) -> AfterProbe:
    if not live and state is ConnectionState.CONNECTED:
        return AfterProbe.LOST
    if live and state is ConnectionState.DISCONNECTED:
        return AfterProbe.BACK
    return AfterProbe.NOTHING


def outage_text(raw: str, seconds: float) -> str:
    """An outage as it stands now: for how long the server has not answered, that it is
    retried, and its last answer in parentheses (the banner's Details). Updated at each probe,
    so "Server exiting" does not linger once the process is gone."""
    lead = "the server does not answer" if seconds < 1 else f"the server has not answered for {seconds:.0f} s"
    return f"{lead}; retrying every {RECOVERY_INTERVAL_S:g} s ({raw or 'no answer'})"


def probe_interval(state: ConnectionState) -> float:
    return RECOVERY_INTERVAL_S if state is ConnectionState.DISCONNECTED else HEALTH_INTERVAL_S


def keep_session_when_back(session_open: bool, in_use: bool) -> bool:
    """The server answers again. A session in use (a batch runs, its requests retrying) is
    kept; otherwise it is rebuilt: fresh channels (no reconnect back-off, no server marked
    down) and the model read again (the server may have restarted with others)."""
    return session_open and in_use
