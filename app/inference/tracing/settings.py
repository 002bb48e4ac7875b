"""Triton's trace settings, read and changed over either protocol (the trace extension).

`get_trace_settings` / `update_trace_settings`, per model or for the whole server (model
""): the app turns tracing on for the model it traces (level TIMESTAMPS, every request,
each trace written at once: `log_frequency` 1, which as a start flag did not take on 2.51)
and puts back afterwards what it changed: a setting the model had inherited is cleared (a
value of None: back to the global one), one of its own is set back.

A server without the extension (gRPC UNIMPLEMENTED, HTTP 404...) is recorded in its
`ServerFeatures` and named once, in one sentence (extensions.MISSING); the client's own
timeline still works without it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from tritonclient.utils import InferenceServerException

from app.inference.errors import SessionError, classify_failure, extension_missing
from app.inference.introspection.extensions import MISSING, Extension, ServerFeatures
from app.inference.transports.channel import Channel, Headers, TraceSettingsJson

log = logging.getLogger(__name__)

# Every request of the model, its marks, each trace in a file of its own as soon as it ends.
TRACE_ON: dict[str, Any] = {
    "trace_level": ["TIMESTAMPS"],
    "trace_rate": "1",
    "trace_count": "-1",
    "log_frequency": "1",
}


@dataclass(frozen=True)
class TraceServerSettings:
    """What a server's trace settings say (one model's, or the global ones)."""

    mode: str  # "triton" (its trace file) or "opentelemetry"
    level: tuple[str, ...]
    rate: int
    count: int
    log_frequency: int
    trace_file: str  # Triton's mode: the base name of its files, on the server's machine
    collector_url: str  # OpenTelemetry mode: where the server posts its spans
    raw: TraceSettingsJson = field(default_factory=dict, compare=False)

    @classmethod
    def from_json(cls, settings: TraceSettingsJson) -> TraceServerSettings:
        def one(key: str, default: str = "") -> str:
            values = settings.get(key) or [default]
            return values[0]

        def number(key: str, default: int) -> int:
            try:
                return int(one(key, str(default)))
            except ValueError:
                return default

        return cls(
            mode=one("trace_mode", "triton") or "triton",
            level=tuple(settings.get("trace_level", [])),
            rate=number("trace_rate", 1000),
            count=number("trace_count", -1),
            log_frequency=number("log_frequency", 0),
            trace_file=one("trace_file"),
            collector_url=one("url"),
            raw=settings,
        )

    @property
    def on(self) -> bool:
        return any(level.upper() in ("TIMESTAMPS", "TENSORS") for level in self.level)

    @property
    def opentelemetry(self) -> bool:
        return self.mode.lower() == "opentelemetry"


class TraceControl:
    """Tracing turned on for the models traced, and put back when done (`restore`). Blocking
    calls: from a worker thread or the command line, never the GUI thread."""

    def __init__(
        self, channel: Channel, headers: Headers, features: ServerFeatures, timeout_s: float = 5.0
    ) -> None:
        self.channel = channel
        self.headers = headers
        self.features = features
        self.timeout_s = timeout_s
        self._changed: dict[str, dict[str, Any]] = {}  # model -> the settings that put it back

    def _call(self, what: str, call: Any) -> TraceSettingsJson | None:
        if self.features.lacks(Extension.TRACE):
            return None
        try:
            result: TraceSettingsJson = call()
            return result
        except InferenceServerException as e:
            if extension_missing(e):
                self.features.mark_missing(Extension.TRACE)
                return None
            failure = classify_failure(e, self.channel.endpoint, list(self.headers.values()))
            raise SessionError(f"{what}: {failure.message}", failure.kind) from None

    def settings(self, model: str = "") -> TraceServerSettings | None:
        """The trace settings of `model` ("" the server's); None: the server has no tracing."""
        found = self.channel_settings(model)
        return None if found is None else TraceServerSettings.from_json(found)

    def enable(self, model: str, changes: dict[str, Any] | None = None) -> TraceServerSettings | None:
        """Trace every request of `model` (TRACE_ON, or `changes`); None: no tracing there."""
        wanted = dict(TRACE_ON if changes is None else changes)
        before = self.channel_settings(model)
        if before is None:
            return None
        overall = self.channel_settings("") or {}
        if model not in self._changed:
            self._changed[model] = {
                key: (None if before.get(key) == overall.get(key) else before.get(key)) for key in wanted
            }
        found = self._call(
            f"turning tracing on for model '{model}'",
            lambda: self.channel.update_trace_settings(
                model, wanted, headers=self.headers, timeout_s=self.timeout_s
            ),
        )
        return None if found is None else TraceServerSettings.from_json(found)

    def channel_settings(self, model: str) -> TraceSettingsJson | None:
        return self._call(
            "reading the trace settings",
            lambda: self.channel.trace_settings(model, headers=self.headers, timeout_s=self.timeout_s),
        )

    def restore(self) -> None:
        """Put back what `enable` changed (best effort: a server gone meanwhile is logged)."""
        changed, self._changed = self._changed, {}
        for model, settings in changed.items():
            try:
                self.channel.update_trace_settings(
                    model, settings, headers=self.headers, timeout_s=self.timeout_s
                )
            except InferenceServerException as e:
                log.warning("could not put back the trace settings of '%s': %s", model, e)

    @property
    def missing_note(self) -> str | None:
        """The one sentence to say when the server turned out to have no tracing."""
        return MISSING[Extension.TRACE] if self.features.lacks(Extension.TRACE) else None
