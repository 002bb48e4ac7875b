"""Fixtures for the widget tests; everything runs offscreen."""

from __future__ import annotations

import os

# Before any QApplication exists (pytest-qt creates it lazily in the qapp fixture).
os.environ["QT_QPA_PLATFORM"] = "offscreen"

import numpy as np
import pytest


@pytest.fixture
def rgb_image() -> np.ndarray:
    """A 320 x 240 gradient (RGB uint8), different in every pixel column/row."""
    h, w = 240, 320
    img = np.zeros((h, w, 3), np.uint8)
    img[..., 0] = np.linspace(0, 255, w, dtype=np.uint8)[None, :]
    img[..., 1] = np.linspace(0, 255, h, dtype=np.uint8)[:, None]
    img[..., 2] = 60
    return img


from tests.ui.viewer_fixtures import harness  # noqa: E402, F401  (the whole-window fixture)
