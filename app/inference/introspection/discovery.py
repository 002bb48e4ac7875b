"""What a server has: its models, their state, inputs/outputs, batching; clear errors when not usable.

The protocol first: health from ServerLive and ModelReady, inputs and outputs from the model's
metadata. Triton's repository index and model configuration are used when the server has
them; a server that answers it lacks one (status code) gets it recorded in its
`ServerFeatures`, said once, and skipped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tritonclient.utils import InferenceServerException

from app.inference.errors import (
    SessionError,
    classify_failure,
    error_text,
    extension_missing,
    first_paragraph,
    redact,
    restricted_header,
    restricted_message,
    unreachable_message,
)
from app.inference.introspection.extensions import Extension, ServerFeatures
from app.inference.profiles.profile import ModelProfile, ProfileError, detect_profile
from app.inference.protocol import Endpoint, ServerProtocol, same_server_over
from app.inference.result import ErrorKind
from app.inference.transports.channel import Channel, Headers
from app.inference.transports.port_probe import what_listens
from app.model_states import ModelEntry, ModelState

PREFERRED_MODEL = "face_detector"
PROBE_TIMEOUT_S = 1.0  # looking at what listens on a port that closed the connection
# A model whose server gives no config but whose input's first axis is variable: client
# batches of up to this many images (the session's own client-batch setting is the usual bound).
UNKNOWN_BATCH_LIMIT = 64


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
    # The server gave no model configuration (not Triton): batching known from metadata only.
    config_known: bool = True

    @property
    def client_batch_limit(self) -> int:
        """How many images one request may carry: the config's max_batch_size; without a
        config, any number when the input's first axis is variable (-1) in the metadata."""
        if self.config_known:
            return self.max_batch_size
        shape = next(
            (t.get("shape") or [] for t in self.inputs if t.get("name") == self.profile.input_name), []
        )
        variable = bool(shape) and str(shape[0]) == "-1"
        return UNKNOWN_BATCH_LIMIT if variable and self.profile.has_batch_dim else 0


def _call(endpoint: Endpoint, secrets: list[str | bytes], fn: Any, *args: Any, **kwargs: Any) -> Any:
    try:
        return fn(*args, **kwargs)
    except InferenceServerException as e:
        failure = classify_failure(e, endpoint, secrets)
        raise SessionError(failure.message, failure.kind) from None


def check_live(channel: Channel, headers: Headers, timeout_s: float) -> None:
    endpoint = channel.endpoint
    secrets = list(headers.values())
    http = channel.protocol is ServerProtocol.HTTP
    try:
        live = channel.is_live(headers=headers, timeout_s=timeout_s)
    except InferenceServerException as e:
        failure = classify_failure(e, endpoint, secrets)
        if failure.kind is ErrorKind.UNREACHABLE and failure.closed_by_peer:
            # TLS server, or a port of the other protocol: the text cannot tell which; one
            # look at the port can.
            listener = what_listens(endpoint, min(timeout_s, PROBE_TIMEOUT_S), grpc=http)
            if listener is not None:
                detail = redact(error_text(e), secrets)
                kind = ErrorKind.TLS if listener == "tls" else ErrorKind.UNREACHABLE
                offer = _offer(endpoint, listener, http)
                message = unreachable_message(endpoint, detail, listener)
                raise SessionError(message, kind, offer=offer) from None
        raise SessionError(failure.message, failure.kind) from None
    if not live:
        raise SessionError(f"the server at {endpoint.url} answers but is not live", ErrorKind.UNREACHABLE)


def _offer(endpoint: Endpoint, listener: str, http: bool) -> str | None:
    """The same server over the protocol that answers on this port, if it is the other one."""
    if listener == "http" and not http:
        return same_server_over(endpoint, ServerProtocol.HTTP)
    if listener == "grpc" and http:
        return same_server_over(endpoint, ServerProtocol.GRPC)
    return None


def server_features(channel: Channel, headers: Headers, timeout_s: float) -> ServerFeatures:
    """The server's name, version and declared extensions (never raises: a server whose
    metadata cannot be read is taken to declare none)."""
    try:
        return ServerFeatures.from_metadata(channel.server_metadata(headers=headers, timeout_s=timeout_s))
    except Exception:
        return ServerFeatures()


def model_ready(channel: Channel, name: str, version: str, headers: Headers, timeout_s: float) -> bool:
    """The protocol's own ModelReady (False when the server does not know the model)."""
    try:
        return channel.is_model_ready(name, headers=headers, timeout_s=timeout_s, version=version)
    except InferenceServerException as e:
        failure = classify_failure(e, channel.endpoint, list(headers.values()))
        if failure.kind in (ErrorKind.UNREACHABLE, ErrorKind.TIMEOUT, ErrorKind.TLS):
            raise SessionError(failure.message, failure.kind) from None
        return False


def list_models(channel: Channel, headers: Headers, timeout_s: float = 10.0) -> list[ModelEntry]:
    """The repository index (Triton's extension): SessionError when it cannot be read."""
    entries: list[ModelEntry] = _call(
        channel.endpoint, list(headers.values()), list_models_raw, channel, headers, timeout_s
    )
    return entries


def models_if_listed(
    channel: Channel, headers: Headers, timeout_s: float, features: ServerFeatures
) -> list[ModelEntry] | None:
    """The repository index, or None when the server has no such extension (recorded in
    `features`, to be said once)."""
    try:
        return list_models_raw(channel, headers, timeout_s)
    except InferenceServerException as e:
        if extension_missing(e):
            features.mark_missing(Extension.REPOSITORY)
            return None
        key = restricted_header(e)
        if key is not None:  # restricted protocols: the model is checked with ModelReady
            refusal = restricted_message(channel.endpoint, key)
            features.mark_missing(Extension.REPOSITORY, f"no model list: {refusal}")
            return None
        failure = classify_failure(e, channel.endpoint, list(headers.values()))
        raise SessionError(failure.message, failure.kind) from None


def list_models_raw(channel: Channel, headers: Headers, timeout_s: float) -> list[ModelEntry]:
    """As list_models, raising tritonclient's error as it is (its status code decides); with
    the models loaded from uploaded files, which the index does not list."""
    entries = [
        ModelEntry(
            str(m.get("name", "")),
            str(m.get("version", "") or ""),
            ModelState.of(m.get("state")),
            m.get("reason", ""),
        )
        for m in channel.repository_index(headers=headers, timeout_s=timeout_s)
    ]
    return entries + uploaded_models(channel, headers, timeout_s, {e.name for e in entries})


# The reason given for a model that was uploaded (no folder in the repository).
UPLOADED_REASON = "uploaded (its files are not in the server's repository folders)"


def uploaded_models(
    channel: Channel, headers: Headers, timeout_s: float, in_index: set[str]
) -> list[ModelEntry]:
    """Models loaded from uploaded files (`load_model(..., files=...)`, `--model PATH`):
    Triton's index lists the repository's folders only, its statistics every loaded model.
    [] when the server has no statistics extension or the call fails (the index stands)."""
    try:
        stats = channel.inference_statistics("", headers=headers, timeout_s=timeout_s)
    except InferenceServerException:
        return []
    found: dict[tuple[str, str], ModelEntry] = {}
    for m in stats.get("model_stats", []) or []:
        name, version = str(m.get("name", "")), str(m.get("version", "") or "")
        if name and name not in in_index:
            found[(name, version)] = ModelEntry(name, version, ModelState.READY, UPLOADED_REASON)
    return list(found.values())


def model_states(models: list[ModelEntry]) -> dict[str, str]:
    """Each model's state: READY when any of its versions is, else the first one's."""
    states: dict[str, str] = {}
    for m in models:
        if m.name not in states or m.ready:
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
            raise SessionError(missing, ErrorKind.NOT_FOUND, names, states=states)
        if not any(m.ready for m in entries):
            e = entries[0]
            raise SessionError(
                f"model '{wanted}' on {url} is not ready: {e.state or 'not loaded'}"
                + (f": {first_paragraph(e.reason)}" if e.reason else ""),
                ErrorKind.NOT_FOUND,
                names,
                states=states,
            )
        return wanted
    ready = sorted({m.name for m in models if m.ready})
    if PREFERRED_MODEL in ready:
        return PREFERRED_MODEL
    if len(ready) == 1:
        return ready[0]
    if not ready:
        raise SessionError(f"no model is ready on {url} ({there})", ErrorKind.NOT_FOUND, names, states=states)
    raise SessionError(
        f"{url} serves several models; choose one with --model: {', '.join(ready)}",
        ErrorKind.NOT_FOUND,
        names,
        states=states,
    )


def check_version(models: list[ModelEntry], name: str, version: str, url: str) -> None:
    """Raise a NOT_FOUND SessionError unless version `version` of model `name` is ready."""
    if not version:
        return
    entries = [m for m in models if m.name == name]
    ready = sorted((m.version for m in entries if m.ready and m.version), key=_version_key)
    if any(m.version == version and m.ready for m in entries):
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
    features: ServerFeatures | None = None,
) -> ModelInfo:
    """The model's metadata, config (when the server has Triton's configuration extension;
    else recorded in `features`) and detected profile (`version` "": the server's choice)."""
    url, secrets = channel.endpoint.url, list(headers.values())
    metadata = _call(
        channel.endpoint,
        secrets,
        channel.model_metadata,
        name,
        headers=headers,
        timeout_s=timeout_s,
        version=version,
    )
    config = model_config_if_any(channel, name, headers, timeout_s, version, features)
    try:
        profile = detect_profile(metadata, config or {}, overrides)
    except ProfileError as e:
        raise SessionError(
            f"model '{name}' on {url} is not understood: {e}. Describe it with a profile file "
            "(--profile, or Model > Profile… in the viewer)",
            ErrorKind.UNSUPPORTED,
        ) from None
    known = config is not None
    config = config or {}
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
        config_known=known,
    )


def model_config_if_any(
    channel: Channel,
    name: str,
    headers: Headers,
    timeout_s: float,
    version: str = "",
    features: ServerFeatures | None = None,
) -> dict[str, Any] | None:
    """The model's config, or None when the server has no configuration extension (the model
    is known to exist: its metadata was read)."""
    if features is not None and features.lacks(Extension.CONFIG):
        return None
    try:
        return channel.model_config(name, headers=headers, timeout_s=timeout_s, version=version)
    except InferenceServerException as e:
        if extension_missing(e):
            if features is not None:
                features.mark_missing(Extension.CONFIG)
            return None
        failure = classify_failure(e, channel.endpoint, list(headers.values()))
        raise SessionError(failure.message, failure.kind) from None
