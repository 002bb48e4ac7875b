"""What a server says of its models: each one's name, version, state and why it is not ready
(Triton's repository index; ModelReady for a server without one). One record for the
embedded server's start-up checks (app.server), the session's model discovery and the
repository control (app.inference), the command line and the viewer."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

NOT_LOADED_TEXT = "NOT LOADED"  # how ModelState.NOT_LOADED is printed


class ModelState(enum.StrEnum):
    """Triton's wording (what the command line prints and the records say)."""

    READY = "READY"
    UNAVAILABLE = "UNAVAILABLE"  # failed to load, or unloaded
    LOADING = "LOADING"
    UNLOADING = "UNLOADING"
    NOT_READY = "NOT READY"  # ModelReady said no (a server without a model list)
    NOT_LOADED = ""  # listed, never loaded: the index gives no state (printed "NOT LOADED")

    @classmethod
    def of(cls, raw: Any) -> ModelState | str:
        """A repository index's state as Triton writes it: MLServer's "State.READY" is READY.
        A state in a server's own wording stays as it is (upper case)."""
        text = str(raw or "").rsplit(".", 1)[-1].upper()
        try:
            return cls(text)
        except ValueError:
            return text


@dataclass(frozen=True)
class ModelEntry:
    name: str
    version: str  # "" when the model has never been loaded (or the server does not say)
    state: ModelState | str  # a ModelState, or a state in the server's own wording
    reason: str = ""  # why it is not ready ("unloaded", the load error), the backend's traceback cut

    @property
    def ready(self) -> bool:
        return self.state == ModelState.READY

    @property
    def state_text(self) -> str:
        """The state as the command line and the viewer print it."""
        return str(self.state) or NOT_LOADED_TEXT

    def to_record(self) -> dict[str, str]:
        return {"name": self.name, "version": self.version, "state": str(self.state), "reason": self.reason}
