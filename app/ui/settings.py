"""Settings remembered between runs (QSettings). TRITON_VIEWER_SETTINGS_DIR relocates them
(tests use a temporary folder so they never touch the user's real settings)."""

from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtCore import QByteArray, QSettings

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
        score = self.qsettings.value(f"thresholds/{model}/score")
        iou = self.qsettings.value(f"thresholds/{model}/iou")
        if score is None or iou is None:
            return None
        try:
            return float(str(score)), float(str(iou))
        except (TypeError, ValueError):
            return None

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

    def transport(self) -> tuple[str, int]:
        """(TransportKind value, client batch); unknown or out-of-range values are ignored."""
        kind = str(self.qsettings.value("transport/kind", "auto"))
        try:
            batch = int(str(self.qsettings.value("transport/client_batch", 1)))
        except (TypeError, ValueError):
            batch = 1
        if kind not in ("auto", "grpc", "shm"):
            kind = "auto"
        return kind, batch if 1 <= batch <= 64 else 1

    def set_transport(self, kind: str, client_batch: int) -> None:
        self.qsettings.setValue("transport/kind", kind)
        self.qsettings.setValue("transport/client_batch", client_batch)

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
