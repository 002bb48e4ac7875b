"""Settings remembered between runs (QSettings). TRITON_VIEWER_SETTINGS_DIR relocates them
(tests use a temporary folder so they never touch the user's real settings).

A settings file can be edited by hand or left by another version: every value read is
checked, and a bad one is ignored with a warning naming the file and the key (the viewer
then uses its default), never passed on to break something later.

The file is readable by its user only (0600: it names servers, models and folders). A
settings folder that cannot be used (a file, not creatable, read-only) is a warning that
nothing will be saved, never a traceback: the viewer runs on its defaults.
"""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

from PySide6.QtCore import QByteArray, QSettings

from app.analytics.zones_file import ZonesConfig
from app.inference.transports.transport import TransportKind
from app.system.atomic_files import check_writable

log = logging.getLogger(__name__)

SETTINGS_DIR_ENV = "TRITON_VIEWER_SETTINGS_DIR"
MAX_RECENT_SERVERS = 10
MAX_CLIENT_BATCH = 64


NOT_SAVED = "nothing will be saved this session (the viewer uses its defaults)"


def open_settings() -> QSettings:
    folder = os.environ.get(SETTINGS_DIR_ENV)
    if folder:
        return QSettings(str(Path(folder) / "triton-viewer.ini"), QSettings.Format.IniFormat)
    return QSettings("triton-viewer", "viewer")


def prepare_settings_file(path: str | os.PathLike[str]) -> str | None:
    """Make the settings file's folder and the file itself, readable by this user only (Qt
    keeps a file's permissions when it saves it again). Why it cannot be used, if it cannot."""
    file = Path(path)
    folder = file.parent
    if folder.exists() and not folder.is_dir():
        return f"settings folder {folder} is a file, not a folder: {NOT_SAVED}"
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as e:
        return f"settings folder {folder} cannot be created ({e.strerror or e}): {NOT_SAVED}"
    try:
        check_writable(folder)
    except OSError as e:
        return f"settings folder {folder} cannot be written ({e.strerror or e}): {NOT_SAVED}"
    try:
        fd = os.open(file, os.O_CREAT | os.O_WRONLY, 0o600)
        os.close(fd)
        if file.stat().st_uid == os.geteuid():
            file.chmod(0o600)
    except OSError as e:
        return f"settings file {file} cannot be written ({e.strerror or e}): {NOT_SAVED}"
    return None


class ViewerSettings:
    """Typed access to the few values the viewer keeps."""

    def __init__(self, settings: QSettings | None = None) -> None:
        self.qsettings = settings or open_settings()
        self._on_warning: Callable[[str], None] | None = None
        self._pending: list[str] = []  # warnings from before anyone listened
        problem = prepare_settings_file(self.qsettings.fileName())
        if problem is not None:
            self.warn(problem)

    @property
    def on_warning(self) -> Callable[[str], None] | None:
        """Where warnings go besides the log (the viewer shows them); set, it gets those of
        the start (an unusable settings folder) first."""
        return self._on_warning

    @on_warning.setter
    def on_warning(self, listener: Callable[[str], None] | None) -> None:
        self._on_warning = listener
        if listener is not None:
            pending, self._pending = self._pending, []
            for message in pending:
                listener(message)

    def warn(self, message: str) -> None:
        log.warning("%s", message)
        if self._on_warning is not None:
            self._on_warning(message)
        else:
            self._pending.append(message)

    def warn_ignored(self, key: str, value: object, why: str) -> None:
        self.warn(f"settings {self.qsettings.fileName()}: {key} = {value!r} {why}; ignored")

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
        raw = self.qsettings.value("display/mask_opacity")
        if raw is None:
            return None
        value = _unit_interval(raw)
        if value is None:
            self.warn_ignored(
                "display/mask_opacity", raw, "is not a number within 0..1 (the default is used)"
            )
        return value

    def set_mask_opacity(self, opacity: float) -> None:
        self.qsettings.setValue("display/mask_opacity", opacity)

    def transport(self) -> tuple[TransportKind, int]:
        """(TransportKind, client batch); unknown or out-of-range values are ignored, with a
        warning naming the key."""
        kind, batch = TransportKind.AUTO, 1
        raw_kind = self.qsettings.value("transport/kind")
        if raw_kind is not None:
            if str(raw_kind) in TransportKind.__members__.values():
                kind = TransportKind(str(raw_kind))
            else:
                choices = ", ".join(k.value for k in TransportKind)
                self.warn_ignored("transport/kind", raw_kind, f"is not one of {choices} (auto is used)")
        raw_batch = self.qsettings.value("transport/client_batch")
        if raw_batch is not None:
            try:
                value = int(str(raw_batch))
            except (TypeError, ValueError):
                value = 0
            if 1 <= value <= MAX_CLIENT_BATCH:
                batch = value
            else:
                self.warn_ignored(
                    "transport/client_batch",
                    raw_batch,
                    f"is not a whole number from 1 to {MAX_CLIENT_BATCH} (1 is used)",
                )
        return kind, batch

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

    def metrics_address(self, server: str) -> str | None:
        """The metrics address typed for `server` (its URL) in the Server view, if any."""
        key = _metrics_key(server)
        value = self.qsettings.value(key)
        if value is None or value == "":
            return None
        if not isinstance(value, str) or any(c.isspace() for c in value.strip()):
            self.warn_ignored(key, value, "is not an address (HOST:PORT or a URL)")
            return None
        return value.strip()

    def set_metrics_address(self, server: str, address: str | None) -> None:
        """Remember (None or "": forget) the metrics address of `server`."""
        if address:
            self.qsettings.setValue(_metrics_key(server), address)
        else:
            self.qsettings.remove(_metrics_key(server))

    def zones(self, source: str) -> ZonesConfig | None:
        """The lines and zones drawn on `source` (its path, URL or "camera N"), if any."""
        key = _zones_key(source)
        raw = self.qsettings.value(key)
        if raw is None or raw == "":
            return None
        try:
            return ZonesConfig.from_dict(json.loads(str(raw)), key)
        except (ValueError, TypeError) as e:  # (ZonesFileError and JSON errors are ValueErrors)
            self.warn_ignored(key, str(raw)[:60], f"is not a zones description ({e})")
            return None

    def set_zones(self, source: str, config: ZonesConfig | None) -> None:
        """Remember (None or empty: forget) the lines and zones of `source`."""
        if config is None or config.empty:
            self.qsettings.remove(_zones_key(source))
        else:
            self.qsettings.setValue(_zones_key(source), json.dumps(config.to_dict()))

    def last_dir(self, kind: str) -> str:
        """The folder a file dialog of this kind ("open", "export") last used ("" if none)."""
        value = self.qsettings.value(f"dirs/{kind}", "")
        return str(value) if value and Path(str(value)).is_dir() else ""

    def set_last_dir(self, kind: str, folder: str) -> None:
        self.qsettings.setValue(f"dirs/{kind}", folder)

    def sync(self) -> None:
        self.qsettings.sync()


def _zones_key(source: str) -> str:
    # A path or URL holds "/" (QSettings' group separator): quoted into one key.
    return f"zones/{quote(source, safe='')}"


def _metrics_key(server: str) -> str:
    # A server's URL holds "/" (QSettings' group separator) and ":": quoted into one key.
    return f"metrics/{quote(server, safe='')}"


def _unit_interval(raw: object) -> float | None:
    """A finite number within 0..1, from what QSettings returns (a str from an INI file)."""
    try:
        value = float(str(raw))
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) and 0.0 <= value <= 1.0 else None
