"""What `TritonSession.open()` finds out before the first request: which servers answer, what
they have of Triton's extensions, the models they serve, the model to use (asked for, else
the bundled detector, else the only one ready) in the version asked for, its metadata,
config and profile, and that every server that answers has it. Blocking network calls; each
failure a SessionError with its kind.

The protocol first: a server without Triton's repository index (a model list) still serves
a model named by the user, checked with ModelReady; one that lists a model in a state of its
own wording (MLServer's "State.READY") is asked ModelReady before it is refused."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from app.inference.core.pool import ConnectionPool
from app.inference.errors import SessionError
from app.inference.introspection.discovery import (
    ModelInfo,
    check_live,
    check_version,
    choose_model,
    model_info,
    model_ready,
    model_states,
    models_if_listed,
    server_features,
)
from app.inference.introspection.extensions import ServerFeatures
from app.inference.protocol import Endpoint
from app.inference.result import ErrorKind
from app.inference.transports.channel import Channel, Headers
from app.model_states import ModelEntry, ModelState

log = logging.getLogger(__name__)

LIVENESS_TIMEOUT_S = 5.0  # at most this long per server to say whether it is there


@dataclass(frozen=True)
class Discovery:
    live: list[Endpoint]  # the servers that answered (the others are marked unreachable in the pool)
    models: list[ModelEntry]  # what the first of them serves ([] without a repository index)
    info: ModelInfo  # the model chosen, with its profile
    features: ServerFeatures  # what the first of them has of Triton's extensions


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
    features = server_features(first, headers, timeout_s)
    models, name = _choose(first, model, version, headers, timeout_s, features)
    try:
        info = model_info(first, name, headers, dict(overrides or {}) or None, timeout_s, version, features)
    except SessionError as e:
        # The models there, so that the user can choose another one.
        names = e.models or sorted({m.name for m in models})
        raise SessionError(str(e), e.kind, names, states=e.states or model_states(models)) from None
    for endpoint in live[1:]:
        _choose(pool.first_channel(endpoint), name, version, headers, timeout_s, ServerFeatures())
    return Discovery(live, models, info, features)


def _choose(
    channel: Channel,
    model: str | None,
    version: str,
    headers: Headers,
    timeout_s: float,
    features: ServerFeatures,
) -> tuple[list[ModelEntry], str]:
    """(the models listed, the model to use) on one server."""
    url = channel.endpoint.url
    models = models_if_listed(channel, headers, timeout_s, features)
    if models is None:  # no repository index: the model must be named, and ModelReady says
        if not model:
            raise SessionError(
                f"the server at {url} gives no model list (Triton's repository extension): "
                "name the model (--model NAME)",
                ErrorKind.NOT_FOUND,
            )
        if not model_ready(channel, model, version, headers, timeout_s):
            which = f"model '{model}'" + (f" version {version}" if version else "")
            raise SessionError(f"{which} is not ready on {url} (ModelReady)", ErrorKind.NOT_FOUND)
        return [ModelEntry(model, version, ModelState.READY)], model
    try:
        name = choose_model(models, model, url)
        check_version(models, name, version, url)
    except SessionError:
        # Listed in a state of the server's own wording: the protocol's ModelReady decides.
        listed = model is not None and any(m.name == model for m in models)
        if not (listed and model is not None and model_ready(channel, model, version, headers, timeout_s)):
            raise
        name = model
    return models, name


def _live_servers(pool: ConnectionPool, headers: Headers, timeout_s: float) -> list[Endpoint]:
    """The servers that answer; SessionError (the first failure's kind) when none does."""
    live: list[Endpoint] = []
    errors: list[SessionError] = []
    for endpoint in pool.endpoints:
        try:
            check_live(pool.first_channel(endpoint), headers, timeout_s)
            live.append(endpoint)
        except SessionError as e:
            errors.append(e)
            pool.mark_unreachable(endpoint, str(e))
    if not live:
        offer = next((e.offer for e in errors if e.offer), None) if len(errors) == 1 else None
        raise SessionError("; ".join(map(str, errors)), errors[0].kind, offer=offer)
    for error in errors:
        log.warning("%s (using the other servers)", error)
    return live
