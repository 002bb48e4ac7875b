"""What `TritonSession.open()` finds out before the first request: which servers answer, the
models they serve, the model to use (asked for, else the bundled detector, else the only one
ready) in the version asked for, its metadata, config and profile, and that every server
that answers has it. Blocking network calls; each failure a SessionError with its kind."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from app.inference.core.pool import ConnectionPool
from app.inference.errors import SessionError
from app.inference.introspection.discovery import (
    ModelEntry,
    ModelInfo,
    check_live,
    check_version,
    choose_model,
    list_models,
    model_info,
    model_states,
)
from app.inference.transports.channel import Headers

log = logging.getLogger(__name__)

LIVENESS_TIMEOUT_S = 5.0  # at most this long per server to say whether it is there


@dataclass(frozen=True)
class Discovery:
    live: list[str]  # the servers that answered (the others are marked unreachable in the pool)
    models: list[ModelEntry]  # what the first of them serves
    info: ModelInfo  # the model chosen, with its profile


def discover(
    pool: ConnectionPool,
    model: str | None,
    version: str,
    headers: Headers,
    overrides: Mapping[str, Any] | None,
    timeout_s: float,
) -> Discovery:
    live = _live_servers(pool, headers, min(timeout_s, LIVENESS_TIMEOUT_S))
    first = pool.first_channel(live[0])
    models = list_models(first, headers, timeout_s)
    name = choose_model(models, model, first.url)
    check_version(models, name, version, first.url)
    try:
        info = model_info(first, name, headers, dict(overrides or {}) or None, timeout_s, version)
    except SessionError as e:
        # The models there, so that the user can choose another one.
        names = e.models or sorted({m.name for m in models})
        raise SessionError(str(e), e.kind, names, e.states or model_states(models)) from None
    for url in live[1:]:
        others = list_models(pool.first_channel(url), headers, timeout_s)
        choose_model(others, name, url)
        check_version(others, name, version, url)
    return Discovery(live, models, info)


def _live_servers(pool: ConnectionPool, headers: Headers, timeout_s: float) -> list[str]:
    """The servers that answer; SessionError (the first failure's kind) when none does."""
    live: list[str] = []
    errors: list[SessionError] = []
    for url in pool.urls:
        try:
            check_live(pool.first_channel(url), headers, timeout_s)
            live.append(url)
        except SessionError as e:
            errors.append(e)
            pool.mark_unreachable(url, str(e))
    if not live:
        raise SessionError("; ".join(map(str, errors)), errors[0].kind)
    for error in errors:
        log.warning("%s (using the other servers)", error)
    return live
