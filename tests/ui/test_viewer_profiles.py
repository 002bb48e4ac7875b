"""Profiles in the viewer (--profile/--labels, Model > Profile… remembered per model) and bad
values from settings or profiles: a clear message, the model list, never a silent stall."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest
from PySide6.QtGui import QImage
from skimage import data

from app.pipeline.connection.state import ConnectionState
from app.resources import sample_image
from app.server.embedded import EmbeddedServer
from app.ui.base.settings import SETTINGS_DIR_ENV, ViewerSettings, open_settings
from tests.ui.test_viewer_process import run_viewer
from tests.ui.viewer_fixtures import Harness, until, write_png

pytestmark = [pytest.mark.gui, pytest.mark.slow]

UNKNOWN = "unknown_layout"
PROFILE = 'labels = ["cat", "dog"]\n\n[output]\nformat = "yolov5"\nnames = ["output"]\n'


def profile_file(folder: Path, text: str = PROFILE) -> Path:
    path = folder / "unknown_layout.toml"
    path.write_text(text)
    return path


def test_unknown_layout_model_exits_with_the_reason_and_the_models(
    triton: EmbeddedServer, tmp_path: Path
) -> None:
    out = tmp_path / "out.png"
    proc = run_viewer(tmp_path, "--url", triton.grpc_url, "--model", UNKNOWN, "--screenshot", str(out))
    assert proc.returncode == 1
    assert f"model '{UNKNOWN}' on {triton.grpc_url} is not understood" in proc.stderr
    assert "output layout not recognised" in proc.stderr and "Model > Profile" in proc.stderr
    models_line = next(line for line in proc.stderr.splitlines() if line.startswith("models on the server:"))
    assert UNKNOWN in models_line and "face_detector" in models_line
    assert not QImage(str(out)).isNull()  # the window (with its banner) was saved all the same


def test_profile_option_makes_the_unknown_model_usable(triton: EmbeddedServer, tmp_path: Path) -> None:
    out = tmp_path / "out.png"
    image = write_png(tmp_path / "astronaut.png", data.astronaut())
    profile = profile_file(tmp_path)
    proc = run_viewer(
        tmp_path,
        *("--url", triton.grpc_url, "--model", UNKNOWN, "--profile", str(profile)),
        *("--open", str(image), "--screenshot", str(out)),
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""


def test_labels_option_reaches_the_session(triton: EmbeddedServer, tmp_path: Path) -> None:
    # Two names make the [10, 7] output readable (5 + 2 columns: YOLOv5 with two classes).
    labels = tmp_path / "pets.txt"
    labels.write_text("cat\ndog\n")
    out = tmp_path / "out.png"
    image = write_png(tmp_path / "astronaut.png", data.astronaut())
    proc = run_viewer(
        tmp_path,
        *("--url", triton.grpc_url, "--model", UNKNOWN, "--labels", str(labels)),
        *("--open", str(image), "--screenshot", str(out)),
    )
    assert proc.returncode == 0, proc.stderr
    missing = tmp_path / "missing.txt"
    refused = run_viewer(tmp_path, "--url", triton.grpc_url, "--labels", str(missing))
    assert refused.returncode == 2 and f"labels file {missing}: not found" in refused.stderr


def test_bad_profile_option_is_a_usage_error(tmp_path: Path) -> None:
    profile = profile_file(tmp_path, "[postprocess]\nscore_threshold = nan\n")
    proc = run_viewer(tmp_path, "--url", "127.0.0.1:1", "--profile", str(profile))
    assert proc.returncode == 2
    assert f"profile file {profile}: score_threshold = nan: expected a finite number" in proc.stderr


def test_nan_threshold_in_the_settings_is_ignored_with_a_warning(
    triton: EmbeddedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SETTINGS_DIR_ENV, str(tmp_path / "settings"))
    settings = ViewerSettings(open_settings())
    settings.qsettings.setValue("thresholds/face_detector/score", "nan")
    settings.qsettings.setValue("thresholds/face_detector/iou", "0.4")
    settings.sync()
    out = tmp_path / "out.png"
    proc = run_viewer(
        tmp_path, "--url", triton.grpc_url, "--open", str(sample_image()), "--screenshot", str(out)
    )
    # The screenshot was taken: the image ran (with the model's own thresholds).
    assert proc.returncode == 0, proc.stderr
    assert out.stat().st_size > 20_000
    settings_file = tmp_path / "settings" / "triton-viewer.ini"
    assert f"settings {settings_file}: thresholds/face_detector/score = 'nan'" in proc.stderr
    assert "not a number within 0..1" in proc.stderr and "ignored" in proc.stderr


def test_nan_threshold_in_the_settings_in_the_window(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    settings = ViewerSettings(open_settings())  # the harness's own settings folder
    settings.qsettings.setValue("thresholds/face_detector/score", "nan")
    settings.qsettings.setValue("thresholds/face_detector/iou", "0.4")
    viewer = harness.viewer(triton.grpc_url, "face_detector")
    harness.connected(viewer)
    harness.run(until(lambda: viewer.live.session is not None, what="the session handed on"))
    assert "thresholds/face_detector/score = 'nan'" in viewer.window.banner.text()
    score, iou = viewer.window.thresholds.score(), viewer.window.thresholds.iou()
    assert math.isfinite(score) and 0 <= score <= 1 and math.isfinite(iou)
    models = [viewer.window.server_panel.model_combo.itemData(i) for i in range(3)]
    assert "face_detector" in models


def test_model_menu_profile_is_applied_by_reconnecting_and_remembered(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    viewer = harness.viewer(triton.grpc_url, UNKNOWN)
    harness.run(until(lambda: viewer.connection.state == ConnectionState.FAILED, what="the failure"))
    banner = viewer.window.banner.text()
    assert "not understood" in banner and "Model > Profile" in banner
    panel = viewer.window.server_panel
    listed = [panel.model_combo.itemData(i) for i in range(panel.model_combo.count())]
    assert UNKNOWN in listed and "face_detector" in listed
    assert panel.current_model() == UNKNOWN

    bad = tmp_path / "bad.toml"
    bad.write_text("[input]\nsize = [0, 640]\n")
    viewer.profiles.set_profile(str(bad))
    harness.run(until(lambda: str(bad) in viewer.window.banner.text(), what="the bad profile refused"))
    assert "input_size = [0, 640]: sides must be within 1..8192" in viewer.window.banner.text()
    assert viewer.settings.profile(UNKNOWN) is None

    good = profile_file(tmp_path)
    viewer.profiles.set_profile(str(good))
    harness.connected(viewer)
    session = viewer.connection.session
    assert session is not None and session.info is not None and session.info.name == UNKNOWN
    assert session.profile.labels == ("cat", "dog")
    result = session.infer(data.astronaut())
    assert result.ok and [d.label for d in result.detections] == ["dog"]
    assert viewer.settings.profile(UNKNOWN) == str(good)
    harness.close(viewer)

    again = harness.viewer(triton.grpc_url, UNKNOWN)  # the same settings: remembered
    harness.connected(again)
    assert again.connection.session is not None
    assert again.connection.session.profile.labels == ("cat", "dog")
    again.profiles.set_profile(None)  # Model > Use the detected profile
    harness.run(until(lambda: again.connection.state == ConnectionState.FAILED, what="detected again"))
    assert again.settings.profile(UNKNOWN) is None


def test_a_remembered_profile_that_went_missing_is_ignored_with_a_warning(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    missing = tmp_path / "gone.toml"
    settings = ViewerSettings(open_settings())
    settings.set_profile("face_detector", str(missing))
    viewer = harness.viewer(triton.grpc_url, "face_detector")
    harness.connected(viewer)
    assert f"profiles/face_detector = '{missing}' cannot be used" in viewer.window.banner.text()
    assert os.fspath(missing) in viewer.window.banner.text()
