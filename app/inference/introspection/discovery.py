"""What a server has: its models, their state, inputs/outputs, batching; clear errors when not usable."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tritonclient.utils import InferenceServerException

from app.inference.errors import (
    SessionError,
    classify_failure,
    error_text,
    first_paragraph,
    redact,
    unreachable_message,
)
from app.inference.profiles.profile import ModelProfile, ProfileError, detect_profile
from app.inference.result import ErrorKind
from app.inference.transports.channel import Channel, Headers
from app.inference.transports.port_probe import what_listens

PREFERRED_MODEL = "face_detector"
PROBE_TIMEOUT_S = 1.0  # looking at what listens on a port that closed the connection


@dataclass(frozen=True)
class ModelEntry:
    name: str
    version: str
    state: str
    reason: str


@dataclass(frozen=True)
class ModelInfo:
    name: str
    version: str
    platform: str
    inputs: list[dict[str, Any]]
    outputs: list[dict[str, Any]]
    max_batch_size: int
    dynamic_batching: dict[str, Any] | None
    instance_groups: list[dict[str, Any]]
    profile: ModelProfile
    config: dict[str, Any] = field(repr=False, default_factory=dict)


def _call(url: str, secrets: list[str | bytes], fn: Any, *args: Any, **kwargs: Any) -> Any:
    try:
        return fn(*args, **kwargs)
    except InferenceServerException as e:
        failure = classify_failure(e, url, secrets)
        raise SessionError(failure.message, failure.kind) from None


def check_live(channel: Channel, headers: Headers, timeout_s: float) -> None:
    url = channel.url
    secrets = list(headers.values())
    try:
        live = channel.is_live(headers=headers, timeout_s=timeout_s)
    except InferenceServerException as e:
        failure = classify_failure(e, url, secrets)
        if failure.kind is ErrorKind.UNREACHABLE and failure.closed_by_peer:
            # TLS server or HTTP port: the text cannot tell which; one look at the port can.
            listener = what_listens(url, min(timeout_s, PROBE_TIMEOUT_S))
            if listener is not None:
                detail = redact(error_text(e), secrets)
                kind = ErrorKind.TLS if listener == "tls" else ErrorKind.UNREACHABLE
                raise SessionError(unreachable_message(url, detail, listener), kind) from None
        raise SessionError(failure.message, failure.kind) from None
    if not live:
        raise SessionError(f"Triton at {url} answers but is not live", ErrorKind.UNREACHABLE)


def list_models(channel: Channel, headers: Headers, timeout_s: float = 10.0) -> list[ModelEntry]:
    index = _call(
        channel.url, list(headers.values()), channel.repository_index, headers=headers, timeout_s=timeout_s
    )
    return [
        ModelEntry(m.get("name", ""), str(m.get("version", "")), m.get("state", ""), m.get("reason", ""))
        for m in index
    ]


def model_states(models: list[ModelEntry]) -> dict[str, str]:
    """Each model's state: READY when any of its versions is, else the first one's."""
    states: dict[str, str] = {}
    for m in models:
        if m.name not in states or m.state == "READY":
            states[m.name] = m.state
    return states


def choose_model(models: list[ModelEntry], wanted: str | None, url: str) -> str:
    """The model to use: the one asked for, else the bundled detector, else the only ready one."""
    names = sorted({m.name for m in models})
    states = model_states(models)
    there = f"models there: {', '.join(names) or '(none)'}"
    if wanted:
        entries = [m for m in models if m.name == wanted]
        if not entries:
            missing = f"model '{wanted}' not found on {url}; {there}"
            raise SessionError(missing, ErrorKind.NOT_FOUND, names, states)
        if not any(m.state == "READY" for m in entries):
            e = entries[0]
            raise SessionError(
                f"model '{wanted}' on {url} is not ready: {e.state or 'not loaded'}"
                + (f": {first_paragraph(e.reason)}" if e.reason else ""),
                ErrorKind.NOT_FOUND,
                names,
                states,
            )
        return wanted
    ready = sorted({m.name for m in models if m.state == "READY"})
    if PREFERRED_MODEL in ready:
        return PREFERRED_MODEL
    if len(ready) == 1:
        return ready[0]
    if not ready:
        raise SessionError(f"no model is ready on {url} ({there})", ErrorKind.NOT_FOUND, names, states)
    raise SessionError(
        f"{url} serves several models; choose one with --model: {', '.join(ready)}",
        ErrorKind.NOT_FOUND,
        names,
        states,
    )


def check_version(models: list[ModelEntry], name: str, version: str, url: str) -> None:
    """Raise a NOT_FOUND SessionError unless version `version` of model `name` is ready."""
    if not version:
        return
    entries = [m for m in models if m.name == name]
    ready = sorted((m.version for m in entries if m.state == "READY" and m.version), key=_version_key)
    if any(m.version == version and m.state == "READY" for m in entries):
        return
    listed = next((m for m in entries if m.version == version), None)
    why = f": {listed.state or 'not loaded'}" if listed is not None else ""
    raise SessionError(
        f"model '{name}' version {version} is not ready on {url}{why}; "
        f"versions ready there: {', '.join(ready) or '(none)'}",
        ErrorKind.NOT_FOUND,
        sorted({m.name for m in models}),
    )


def _version_key(version: str) -> tuple[int, str]:
    return (int(version), "") if version.isdigit() else (1 << 62, version)


def model_info(
    channel: Channel,
    name: str,
    headers: Headers,
    overrides: dict[str, Any] | None = None,
    timeout_s: float = 10.0,
    version: str = "",
) -> ModelInfo:
    """The model's metadata, config and detected profile (`version` "": the server's choice)."""
    url, secrets = channel.url, list(headers.values())
    metadata = _call(
        url, secrets, channel.model_metadata, name, headers=headers, timeout_s=timeout_s, version=version
    )
    config = _call(
        url, secrets, channel.model_config, name, headers=headers, timeout_s=timeout_s, version=version
    )
    try:
        profile = detect_profile(metadata, config, overrides)
    except ProfileError as e:
        raise SessionError(
            f"model '{name}' on {url} is not understood: {e}. Describe it with a profile file "
            "(--profile, or Model > Profile… in the viewer)",
            ErrorKind.UNSUPPORTED,
        ) from None
    return ModelInfo(
        name=name,
        version=str((metadata.get("versions") or [""])[-1]),
        platform=config.get("backend") or config.get("platform") or metadata.get("platform", ""),
        inputs=list(metadata.get("inputs", [])),
        outputs=list(metadata.get("outputs", [])),
        max_batch_size=int(config.get("max_batch_size", 0)),
        dynamic_batching=config.get("dynamic_batching"),
        instance_groups=list(config.get("instance_group", [])),
        profile=profile,
        config=config,
    )
