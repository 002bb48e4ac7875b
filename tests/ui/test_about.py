"""Help > About names every bundled model (not only the face detector), from the bundled
repository itself, and fits a small screen."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QLabel, QMainWindow
from pytestqt.qtbot import QtBot

from app.resources import BUNDLED_MODELS, bundled_models
from app.ui.help import about_dialog

pytestmark = [pytest.mark.gui]


def test_about_names_the_bundled_models(qtbot: QtBot) -> None:
    window = QMainWindow()
    qtbot.addWidget(window)
    dialog = about_dialog(window, None)
    qtbot.addWidget(dialog)
    text = " ".join(label.text() for label in dialog.findChildren(QLabel))
    names = bundled_models()
    assert len(names) == 7
    for name in names:
        assert f"<b>{name}</b>: {BUNDLED_MODELS[name]}" in text, name
    assert "BlazeFace" in text and "BlazePose" in text and "Selfie Segmentation" in text
    assert "Apache-2.0" in text
    hint = dialog.sizeHint()
    assert hint.width() <= 1000 and hint.height() <= 600, hint  # 1024x640 with a frame
