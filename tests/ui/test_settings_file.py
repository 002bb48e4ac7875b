"""The viewer's settings file: readable by its user only; a settings folder that cannot be
used (a file, not creatable, read-only) is a warning that nothing will be saved, never a
traceback; bad transport, client batch and opacity values are ignored with a warning naming
the file and the key (as thresholds already were)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from app.inference.transports.transport import TransportKind
from app.resources import sample_image
from app.server.embedded import EmbeddedServer
from app.ui.base.settings import SETTINGS_DIR_ENV, ViewerSettings, open_settings
from tests.write_failures import unwritable_folder

ROOT = Path(__file__).resolve().parents[2]


def settings_in(folder: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[ViewerSettings, list[str]]:
    monkeypatch.setenv(SETTINGS_DIR_ENV, str(folder))
    settings = ViewerSettings(open_settings())
    shown: list[str] = []
    settings.on_warning = shown.append  # those of the start first, as the viewer shows them
    return settings, shown


def test_the_settings_file_is_readable_by_its_user_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings, shown = settings_in(tmp_path / "settings", monkeypatch)
    settings.remember_server("10.0.0.5:8001")
    settings.sync()
    path = Path(settings.qsettings.fileName())
    assert path.is_file() and "10.0.0.5:8001" in path.read_text()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert shown == []
    # An older file (0644) is made private too.
    path.chmod(0o644)
    ViewerSettings(open_settings()).sync()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_settings_folder_that_is_a_file_is_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a_file = tmp_path / "not-a-folder"
    a_file.write_text("x")
    settings, shown = settings_in(a_file, monkeypatch)
    assert settings.model() is None and settings.transport() == (TransportKind.AUTO, 1)  # defaults
    settings.set_model("face_detector")
    settings.sync()  # nothing to save to: no error either
    assert shown == [f"settings folder {a_file} is a file, not a folder: nothing will be saved this session "
                     "(the viewer uses its defaults)"]  # fmt: skip


def test_a_settings_folder_that_cannot_be_made_or_written_is_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with unwritable_folder(tmp_path) as folder:
        _, not_made = settings_in(folder / "settings", monkeypatch)
        _, read_only = settings_in(folder, monkeypatch)
    assert len(not_made) == 1 and f"settings folder {folder / 'settings'} cannot be created" in not_made[0]
    assert len(read_only) == 1 and f"settings folder {folder} cannot be written" in read_only[0]
    assert all("nothing will be saved" in m for m in not_made + read_only)


def test_bad_transport_batch_and_opacity_values_are_ignored_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings, shown = settings_in(tmp_path / "settings", monkeypatch)
    settings.qsettings.setValue("transport/kind", "carrier-pigeon")
    settings.qsettings.setValue("transport/client_batch", "500")
    settings.qsettings.setValue("display/mask_opacity", "1.7")
    assert settings.transport() == (TransportKind.AUTO, 1)
    assert settings.mask_opacity() is None
    where = f"settings {settings.qsettings.fileName()}:"
    assert shown == [
        f"{where} transport/kind = 'carrier-pigeon' is not one of auto, grpc, shm (auto is used); ignored",
        f"{where} transport/client_batch = '500' is not a whole number from 1 to 64 (1 is used); ignored",
        f"{where} display/mask_opacity = '1.7' is not a number within 0..1 (the default is used); ignored",
    ]
    settings.qsettings.setValue("transport/kind", "grpc")
    settings.qsettings.setValue("transport/client_batch", "4")
    settings.qsettings.setValue("display/mask_opacity", "0.25")
    shown.clear()
    assert settings.transport() == (TransportKind.GRPC, 4) and settings.mask_opacity() == 0.25
    assert shown == []


@pytest.mark.slow
def test_the_viewer_runs_with_a_settings_folder_that_is_a_file(
    triton: EmbeddedServer, tmp_path: Path
) -> None:
    a_file = tmp_path / "settings"
    a_file.write_text("x")
    out = tmp_path / "out.png"
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", SETTINGS_DIR_ENV: str(a_file)}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "app",
            "--url",
            triton.grpc_url,
            "--open",
            str(sample_image()),
            "--screenshot",
            str(out),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert f"settings folder {a_file} is a file, not a folder: nothing will be saved" in proc.stderr
    assert out.stat().st_size > 20_000


def test_zones_are_kept_per_source_and_a_bad_entry_is_ignored_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.analytics.zones_file import LineSpec, ZonesConfig

    settings, shown = settings_in(tmp_path / "settings", monkeypatch)
    door = ZonesConfig((LineSpec("door", (320.0, 0.0), (320.0, 480.0)),))
    settings.set_zones("/videos/hall.mp4", door)
    settings.set_zones("rtsp://cam/1?a=b", ZonesConfig((LineSpec("gate", (1.0, 1.0), (9.0, 9.0)),)))
    settings.sync()
    again = ViewerSettings(open_settings())
    assert again.zones("/videos/hall.mp4") == door, "a path's '/' is quoted into one key"
    assert again.zones("rtsp://cam/1?a=b") is not None and again.zones("camera 0") is None
    settings.set_zones("/videos/hall.mp4", ZonesConfig())  # nothing left: forgotten
    assert settings.zones("/videos/hall.mp4") is None
    settings.qsettings.setValue("zones/bad", '{"lines": [{"name": "x", "a": [1, 1], "b": [1, 1]}]}')
    assert settings.zones("bad") is None
    assert any("zones/bad" in message and "zero length" in message for message in shown), shown
