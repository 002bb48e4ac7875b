"""The connection's pure parts: what happens next (by state and ErrorKind), the restart
budget of the embedded server, and the run token that replaced generation counters."""

from __future__ import annotations

import pytest

from app.inference.result import ErrorKind
from app.pipeline.connection.decisions import (
    HEALTH_INTERVAL_S,
    RECOVERY_INTERVAL_S,
    AfterFailedConnect,
    AfterProbe,
    after_failed_connect,
    after_probe,
    keep_session_when_back,
    probe_interval,
)
from app.pipeline.connection.restart_budget import RestartBudget
from app.pipeline.connection.run_token import RunToken
from app.pipeline.connection.state import ConnectionState as S


@pytest.mark.parametrize(
    ("kind", "automatic", "hint", "expected"),
    [
        (ErrorKind.NOT_FOUND, False, True, AfterFailedConnect.OPEN_DEFAULT_MODEL),
        (ErrorKind.NOT_FOUND, True, True, AfterFailedConnect.OPEN_DEFAULT_MODEL),
        (ErrorKind.NOT_FOUND, False, False, AfterFailedConnect.FAIL),
        (ErrorKind.UNREACHABLE, False, True, AfterFailedConnect.FAIL),  # the user's connect
        (ErrorKind.UNREACHABLE, True, False, AfterFailedConnect.KEEP_PROBING),
        (ErrorKind.NOT_FOUND, True, False, AfterFailedConnect.KEEP_PROBING),  # models still loading
        (ErrorKind.TIMEOUT, True, False, AfterFailedConnect.KEEP_PROBING),
        (ErrorKind.TLS, True, False, AfterFailedConnect.FAIL),
        (ErrorKind.UNSUPPORTED, True, False, AfterFailedConnect.FAIL),
        (ErrorKind.SERVER, True, False, AfterFailedConnect.FAIL),
    ],
)
def test_after_a_failed_connect(
    kind: ErrorKind, automatic: bool, hint: bool, expected: AfterFailedConnect
) -> None:
    assert after_failed_connect(kind, automatic=automatic, model_is_hint=hint) is expected


def test_after_a_probe_and_how_often() -> None:
    assert after_probe(S.CONNECTED, live=False) is AfterProbe.LOST
    assert after_probe(S.DISCONNECTED, live=True) is AfterProbe.BACK
    for state, live in (
        (S.CONNECTED, True),
        (S.DISCONNECTED, False),
        (S.FAILED, True),
        (S.CONNECTING, False),
    ):
        assert after_probe(state, live) is AfterProbe.NOTHING
    assert (
        probe_interval(S.DISCONNECTED)
        == RECOVERY_INTERVAL_S
        < probe_interval(S.CONNECTED)
        == HEALTH_INTERVAL_S
    )
    assert keep_session_when_back(session_open=True, in_use=True)
    assert not keep_session_when_back(session_open=True, in_use=False)
    assert not keep_session_when_back(session_open=False, in_use=True)


def test_the_restart_budget_allows_three_in_five_minutes_then_again_later() -> None:
    now = [1000.0]
    budget = RestartBudget(clock=lambda: now[0])
    assert [budget.take() for _ in range(4)] == [True, True, True, False]
    assert budget.used == 3 and budget.describe_use() == "3 of 3 restarts allowed within 5 minutes"
    assert budget.describe_exhausted() == "4 times within 5 minutes"
    now[0] += 299.0
    assert not budget.take()
    now[0] += 2.0  # the first restarts are older than the window now
    assert budget.take() and budget.used == 1
    budget.reset()
    assert budget.used == 0


def test_a_run_token_runs_its_hooks_once_and_late_hooks_at_once() -> None:
    token = RunToken("connect")
    ran: list[str] = []

    def broken() -> None:
        raise RuntimeError("a hook that fails does not stop the others")

    token.on_cancel(lambda: ran.append("first"))
    token.on_cancel(broken)
    token.on_cancel(lambda: ran.append("second"))
    assert not token.cancelled and ran == []
    token.cancel()
    token.cancel()
    assert token.cancelled and ran == ["first", "second"]
    token.on_cancel(lambda: ran.append("late"))
    assert ran == ["first", "second", "late"]
