"""Triton's model repository extension: the index with states and reasons, load (optionally
with a config override), unload, and a model's current config. Blocking calls: run them in
a worker thread in the viewer.

Load and unload work only on a server started with `--model-control-mode=explicit` (the
embedded server is). In `none` or `poll` mode Triton answers them with UNAVAILABLE while it
is otherwise live: that code plus a live server is how we tell "repository control is off"
from "the server is down", never by the message's wording.

A load without an override does not reload a model that is already loaded when its files
are unchanged (Triton 2.51, measured): to go back from an override to the repository's
files, unload then load (`reload_from_files`).

Over gRPC or HTTP (the URL's scheme). A server without these extensions (MLServer has the
index, load and unload but no model configuration) answers UNIMPLEMENTED (HTTP 404): the
error says which extension is missing (`RepositoryErrorKind.NOT_SUPPORTED`).
"""

from __future__ import annotations

import contextlib
import enum
from collections.abc import Mapping
from typing import Any

from tritonclient.utils import InferenceServerException

from app.inference.errors import (
    classify_failure,
    error_text,
    extension_missing,
    first_paragraph,
    redact,
    status_code,
)
from app.inference.introspection.model_config import ModelConfigDict, normalise, to_json, to_pbtxt
from app.inference.introspection.model_names import ModelNameError, check_model_name
from app.inference.protocol import Endpoint
from app.inference.transports.channel import Channel, ConnectionOptions
from app.inference.transports.open_channel import open_channel
from app.model_states import ModelEntry, ModelState

TIMEOUT_S = 10.0
LOAD_TIMEOUT_S = 300.0  # a big model (or many Python-backend instances) takes a while
# The name control_enabled() unloads: no repository holds a model of that name.
CONTROL_PROBE_NAME = ".triton-viewer-control-probe"


class RepositoryErrorKind(enum.StrEnum):
    CONTROL_DISABLED = "control_disabled"  # the server's model-control mode is none or poll
    NOT_FOUND = "not_found"  # no such model in the repository, or not loaded
    BAD_NAME = "bad_name"  # not a name a model of a repository can have (refused before any call)
    LOAD_FAILED = "load_failed"  # the server tried and refused: its reason in the message
    NOT_SUPPORTED = "not_supported"  # the server lacks the extension (not Triton)
    UNREACHABLE = "unreachable"
    OTHER = "other"


class RepositoryError(RuntimeError):
    def __init__(self, message: str, kind: RepositoryErrorKind) -> None:
        super().__init__(message)
        self.kind = kind


def extension_needed_message(url: str, extension: str) -> str:
    """`extension`: "repository" or "model-configuration"."""
    return (
        f"the server at {url} does not have Triton's {extension} extension: the repository "
        "commands and tune need a Triton server"
    )


def control_disabled_message(url: str) -> str:
    return (
        f"the server at {url} does not allow loading or unloading models: its model control mode "
        "is 'none' or 'poll'. Start it with --model-control-mode=explicit (and --load-model=* to "
        "load every model at start) to use the repository commands and tune"
    )


class RepositoryControl:
    """One client (gRPC or HTTP) to one server. Use it from one thread at a time (the CLI's main thread,
    or the viewer's worker); `close()` is idempotent."""

    def __init__(
        self,
        endpoint: Endpoint,
        options: ConnectionOptions | None = None,
        *,
        timeout_s: float = TIMEOUT_S,
        load_timeout_s: float = LOAD_TIMEOUT_S,
    ) -> None:
        self.endpoint = endpoint
        self._options = options or ConnectionOptions()
        self._headers = dict(self._options.headers)
        self.timeout_s = timeout_s
        self.load_timeout_s = load_timeout_s
        self._channel: Channel | None = open_channel(endpoint, self._options)

    @property
    def url(self) -> str:
        """The server as the user wrote it (for messages)."""
        return self.endpoint.url

    def __enter__(self) -> RepositoryControl:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        channel, self._channel = self._channel, None
        if channel is not None:
            with contextlib.suppress(Exception):
                channel.close()

    @property
    def _client(self) -> Channel:
        if self._channel is None:
            raise RepositoryError("the repository client is closed", RepositoryErrorKind.OTHER)
        return self._channel

    # -- reading ------------------------------------------------------------
    def index(self) -> list[ModelEntry]:
        """Every model of the repository (loaded or not), sorted by name and version."""
        try:
            raw = self._client.repository_index(headers=self._headers, timeout_s=self.timeout_s)
        except InferenceServerException as e:
            raise self._error(e, "read the repository index") from None
        entries = [
            ModelEntry(
                str(m.get("name", "")),
                str(m.get("version", "") or ""),
                ModelState.of(m.get("state")),
                first_paragraph(str(m.get("reason", "") or "")),
            )
            for m in raw
        ]
        return sorted(entries, key=lambda e: (e.name, e.version))

    def config(self, name: str) -> ModelConfigDict:
        """The config the server runs the model with now (files or override, auto-completed)."""
        _check_name(name)
        try:
            config = self._client.model_config(name, headers=self._headers, timeout_s=self.timeout_s)
        except InferenceServerException as e:
            raise self._error(e, f"read the config of '{name}'", name, "model-configuration") from None
        return normalise(config, f"the config of '{name}' on {self.url}")

    def config_text(self, name: str) -> str:
        return to_pbtxt(self.config(name))

    def control_enabled(self) -> bool:
        """Whether the server lets us load and unload (explicit model-control mode), asked
        without changing anything: an unload of a model no repository holds succeeds in
        explicit mode (Triton 2.51: nothing to unload) and is refused with UNAVAILABLE in
        `none` or `poll` mode. RepositoryError when the server cannot be reached."""
        try:
            self._client.unload_model(CONTROL_PROBE_NAME, headers=self._headers, timeout_s=self.timeout_s)
        except InferenceServerException as e:
            error = self._error(e, "ask whether models can be loaded")
            if error.kind is RepositoryErrorKind.CONTROL_DISABLED:
                return False
            if error.kind is RepositoryErrorKind.UNREACHABLE:
                raise error from None
        return True

    # -- changing -----------------------------------------------------------
    def load(self, name: str, config: Mapping[str, Any] | None = None) -> None:
        """Load (or reload) `name`; with `config`, that config instead of the repository's file
        (not written to disk). Returns when the model is ready; RepositoryError with the
        server's reason otherwise, the model then being as it was before."""
        _check_name(name)
        payload = None if config is None else to_json(config)
        try:
            self._client.load_model(
                name, headers=self._headers, timeout_s=self.load_timeout_s, config=payload
            )
        except InferenceServerException as e:
            raise self._error(e, f"load '{name}'", name) from None

    def unload(self, name: str) -> None:
        """Unload `name`; RepositoryError NOT_FOUND when the server has no such model (Triton
        itself answers "unloaded" for any name it does not know)."""
        _check_name(name)
        if not self._in_repository(name) and not self._model_known(name):
            raise RepositoryError(
                f"cannot unload '{name}': the server at {self.url} has no such model "
                "(not in its repository, not loaded)",
                RepositoryErrorKind.NOT_FOUND,
            )
        try:
            self._client.unload_model(name, headers=self._headers, timeout_s=self.load_timeout_s)
        except InferenceServerException as e:
            raise self._error(e, f"unload '{name}'", name) from None

    def reload_from_files(self, name: str) -> None:
        """Back to the repository's own config.pbtxt: unload, then load without override."""
        self.unload(name)
        self.load(name)

    # -- errors -------------------------------------------------------------
    def _error(
        self, e: InferenceServerException, action: str, name: str | None = None, extension: str = "repository"
    ) -> RepositoryError:
        code = status_code(e)
        text = first_paragraph(redact(error_text(e), self._headers.values())).rstrip(";").strip()
        # HTTP answers 404 both for a route the server lacks and for a model it does not know.
        if extension_missing(e) and (name is None or self._model_known(name)):
            return RepositoryError(
                f"cannot {action}: {extension_needed_message(self.url, extension)}",
                RepositoryErrorKind.NOT_SUPPORTED,
            )
        if code == "UNAVAILABLE":
            if self._live():
                return RepositoryError(
                    control_disabled_message(self.url), RepositoryErrorKind.CONTROL_DISABLED
                )
            failure = classify_failure(e, self.endpoint, self._headers.values())
            return RepositoryError(f"cannot {action}: {failure.message}", RepositoryErrorKind.UNREACHABLE)
        if code == "NOT_FOUND":
            return RepositoryError(f"cannot {action} on {self.url}: {text}", RepositoryErrorKind.NOT_FOUND)
        if name is not None and not self._in_repository(name):
            return RepositoryError(
                f"cannot {action}: no model '{name}' in the repository of {self.url}",
                RepositoryErrorKind.NOT_FOUND,
            )
        if code == "INVALID_ARGUMENT" and action.startswith("load"):
            return RepositoryError(f"cannot {action}: {text}", RepositoryErrorKind.LOAD_FAILED)
        return RepositoryError(f"cannot {action} on {self.url}: {text}", RepositoryErrorKind.OTHER)

    def _live(self) -> bool:
        try:
            return self._client.is_live(headers=self._headers, timeout_s=self.timeout_s)
        except InferenceServerException:
            return False

    def _model_known(self, name: str) -> bool:
        """The server knows the model (the protocol's own metadata call answers)."""
        try:
            self._client.model_metadata(name, headers=self._headers, timeout_s=self.timeout_s)
            return True
        except InferenceServerException:
            return False

    def _in_repository(self, name: str) -> bool:
        try:
            return any(entry.name == name for entry in self.index())
        except RepositoryError:
            return True  # cannot tell: keep the server's own message


def _check_name(name: str) -> None:
    try:
        check_model_name(name)
    except ModelNameError as e:
        raise RepositoryError(str(e), RepositoryErrorKind.BAD_NAME) from None
