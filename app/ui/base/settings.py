"""Settings remembered between runs (QSettings). TRITON_VIEWER_SETTINGS_DIR relocates them
(tests use a temporary folder so they never touch the user's real settings).

A settings file can be edited by hand or left by another version: every value read is
checked, and a bad one is ignored with a warning naming the file and the key (the viewer
then uses its default), never passed on to break something later.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QByteArray, QSettings

from app.inference.transports.transport import TransportKind

log = logging.getLogger(__name__)

SETTINGS_DIR_ENV = "TRITON_VIEWER_SETTINGS_DIR"
MAX_RECENT_SERVERS = 10


def open_settings() -> QSettings:
    folder = os.environ.get(SETTINGS_DIR_ENV)
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        return QSettings(str(Path(folder) / "triton-viewer.ini"), QSettings.Format.IniFormat)
    return QSettings("triton-viewer", "viewer")


class ViewerSettings:
    """Typed access to the few values the viewer keeps."""

    def __init__(self, settings: QSettings | None = None) -> None:
        self.qsettings = settings or open_settings()
        # Where warnings about bad values go besides the log (the viewer shows them).
        self.on_warning: Callable[[str], None] | None = None

    def warn_ignored(self, key: str, value: object, why: str) -> None:
        message = f"settings {self.qsettings.fileName()}: {key} = {value!r} {why}; ignored"
        log.warning("%s", message)
        if self.on_warning is not None:
            self.on_warning(message)

    def recent_servers(self) -> list[str]:
        value = self.qsettings.value("servers/recent", [])
        if isinstance(value, str):
            return [value] if value else []
        return [str(v) for v in value] if isinstance(value, list) else []

    def remember_server(self, url_text: str) -> None:
        recent = [url_text] + [u for u in self.recent_servers() if u != url_text]
        self.qsettings.setValue("servers/recent", recent[:MAX_RECENT_SERVERS])

    def model(self) -> str | None:
        value = self.qsettings.value("model/name", "")
        return str(value) or None

    def set_model(self, name: str) -> None:
        self.qsettings.setValue("model/name", name)

    def thresholds(self, model: str) -> tuple[float, float] | None:
        """The remembered (score, IoU) of `model`; None when absent or not usable."""
        values = []
        for name in ("score", "iou"):
            key = f"thresholds/{model}/{name}"
            raw = self.qsettings.value(key)
            if raw is None:
                return None
            value = _unit_interval(raw)
            if value is None:
                self.warn_ignored(key, raw, "is not a number within 0..1 (the model's default is used)")
                return None
            values.append(value)
        return values[0], values[1]

    def set_thresholds(self, model: str, score: float, iou: float) -> None:
        self.qsettings.setValue(f"thresholds/{model}/score", score)
        self.qsettings.setValue(f"thresholds/{model}/iou", iou)

    def mask_opacity(self) -> float | None:
        """The mask opacity slider's value, None when not set or not a number within 0..1."""
        try:
            value = float(str(self.qsettings.value("display/mask_opacity")))
        except (TypeError, ValueError):
            return None
        return value if 0.0 <= value <= 1.0 else None

    def set_mask_opacity(self, opacity: float) -> None:
        self.qsettings.setValue("display/mask_opacity", opacity)

    def transport(self) -> tuple[TransportKind, int]:
        """(TransportKind, client batch); unknown or out-of-range values are ignored."""
        value = str(self.qsettings.value("transport/kind", "auto"))
        try:
            batch = int(str(self.qsettings.value("transport/client_batch", 1)))
        except (TypeError, ValueError):
            batch = 1
        kind = TransportKind(value) if value in TransportKind.__members__.values() else TransportKind.AUTO
        return kind, batch if 1 <= batch <= 64 else 1

    def set_transport(self, kind: TransportKind, client_batch: int) -> None:
        self.qsettings.setValue("transport/kind", kind.value)
        self.qsettings.setValue("transport/client_batch", client_batch)

    def profile(self, model: str) -> str | None:
        """The profile file chosen for `model` (Model > Profile…), if any."""
        value = self.qsettings.value(f"profiles/{model}")
        if value is None or value == "":
            return None
        if not isinstance(value, str):
            self.warn_ignored(f"profiles/{model}", value, "is not a file name")
            return None
        return value

    def set_profile(self, model: str, path: str | None) -> None:
        if path:
            self.qsettings.setValue(f"profiles/{model}", path)
        else:
            self.qsettings.remove(f"profiles/{model}")

    def window_state(self) -> tuple[QByteArray | None, QByteArray | None]:
        geometry = self.qsettings.value("window/geometry")
        state = self.qsettings.value("window/state")
        return (
            geometry if isinstance(geometry, QByteArray) else None,
            state if isinstance(state, QByteArray) else None,
        )

    def set_window_state(self, geometry: QByteArray, state: QByteArray) -> None:
        self.qsettings.setValue("window/geometry", geometry)
        self.qsettings.setValue("window/state", state)

    def last_dir(self, kind: str) -> str:
        """The folder a file dialog of this kind ("open", "export") last used ("" if none)."""
        value = self.qsettings.value(f"dirs/{kind}", "")
        return str(value) if value and Path(str(value)).is_dir() else ""

    def set_last_dir(self, kind: str, folder: str) -> None:
        self.qsettings.setValue(f"dirs/{kind}", folder)

    def sync(self) -> None:
        self.qsettings.sync()


def _unit_interval(raw: object) -> float | None:
    """A finite number within 0..1, from what QSettings returns (a str from an INI file)."""
    try:
        value = float(str(raw))
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) and 0.0 <= value <= 1.0 else None
