"""Triton's extensions of the KServe v2 protocol, and what a server has of them.

The protocol itself gives health (`ServerLive`, `ServerReady`, `ModelReady`), metadata and
inference. Triton adds the model configuration, statistics, the repository index and
control, system shared memory, trace, and (over HTTP) binary tensors. Other servers
(MLServer, KServe's own) have some or none: each is used when present, and when a server
answers that it lacks one (gRPC UNIMPLEMENTED, HTTP 404...: the status code, never the
message's text) the user is told so once, in one plain sentence, and the feature is skipped.

A server's metadata lists the extensions it has (`extensions`); Triton lists all of its own,
MLServer none (over gRPC it leaves the field out), though it has the repository index. So
the list decides only the binary tensor extension (a refused binary request cannot be told
from a bad one); the others are tried and their status code decides.
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Iterable


class Extension(enum.StrEnum):
    """Triton's extension names, as its server metadata lists them."""

    CONFIG = "model_configuration"
    STATISTICS = "statistics"
    REPOSITORY = "model_repository"
    SHARED_MEMORY = "system_shared_memory"
    BINARY_DATA = "binary_tensor_data"
    TRACE = "trace"


# One plain sentence per extension, said once when a server turns out not to have it.
MISSING: dict[Extension, str] = {
    Extension.CONFIG: (
        "model configuration not available from this server (Triton's model-configuration "
        "extension): the profile is detected from the model's metadata alone"
    ),
    Extension.STATISTICS: "server statistics not available from this server",
    Extension.REPOSITORY: (
        "no model list from this server (Triton's repository extension): the model named is "
        "checked with the protocol's own ModelReady"
    ),
    Extension.SHARED_MEMORY: (
        "shared memory not available from this server (Triton's shared-memory extension): "
        "tensors go inside the messages"
    ),
    Extension.BINARY_DATA: (
        "binary tensors not available from this server (Triton's binary tensor extension): "
        "tensors travel as JSON over HTTP, which is slower"
    ),
    Extension.TRACE: "request tracing not available from this server (Triton's trace extension)",
}

REPOSITORY_NEEDED = (
    "this needs Triton's repository extension (model configuration, load and unload), "
    "which the server at {url} does not have"
)


class ServerFeatures:
    """What one server has: the extensions its metadata declares (None: it declared none, or
    its metadata could not be read) and those it answered it lacks. Thread-safe: a missing
    one can be found on any thread (statistics read from an executor)."""

    def __init__(self, name: str = "", version: str = "", declared: Iterable[str] | None = None) -> None:
        self.name = name  # e.g. "triton", "mlserver"
        self.version = version
        self.declared = frozenset(declared) if declared is not None else None
        self._missing: list[Extension] = []
        self._reasons: dict[Extension, str] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_metadata(cls, metadata: dict[str, object]) -> ServerFeatures:
        extensions = metadata.get("extensions")
        declared = [str(e) for e in extensions] if isinstance(extensions, list) else None
        return cls(
            str(metadata.get("name", "") or ""), str(metadata.get("version", "") or ""), declared or None
        )

    @property
    def binary_tensors(self) -> bool:
        """Whether tensors may travel as binary over HTTP: only when the server says so."""
        return self.declared is not None and Extension.BINARY_DATA in self.declared

    def lacks(self, extension: Extension) -> bool:
        with self._lock:
            return extension in self._missing

    def mark_missing(self, extension: Extension, reason: str | None = None) -> bool:
        """Record that the server lacks `extension` (`reason`: a sentence of its own instead of
        MISSING's, e.g. the server refused it without a restricted header); True the first time
        (time to say so)."""
        with self._lock:
            if extension in self._missing:
                return False
            self._missing.append(extension)
            if reason is not None:
                self._reasons[extension] = reason
            return True

    def note_for(self, extension: Extension) -> str:
        """The sentence that says `extension` is not there."""
        with self._lock:
            return self._reasons.get(extension, MISSING[extension])

    @property
    def missing(self) -> list[Extension]:
        with self._lock:
            return list(self._missing)

    def notes(self) -> list[str]:
        """The sentences for what is missing, in the order it was found."""
        return [self.note_for(e) for e in self.missing]

    def describe(self) -> str:
        """e.g. "mlserver 1.7.1" ("" when the server did not say)."""
        return f"{self.name} {self.version}".strip()
