"""Fixtures for the widget tests: offscreen unless `pytest --headed`, and no leaked windows."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import numpy as np
import pytest
from PySide6.QtCore import QEvent
from PySide6.QtWidgets import QApplication, QWidget

# Qt's own helper windows, created on demand and kept for reuse: not a test's leak.
QT_INTERNAL = ("QTipLabel", "QComboBoxPrivateContainer", "QMenu")


def _top_level_widgets() -> set[QWidget]:
    QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    QApplication.processEvents()
    gc.collect()
    QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    return {w for w in QApplication.topLevelWidgets() if type(w).__name__ not in QT_INTERNAL}


@pytest.fixture(autouse=True)
def no_leaked_widgets(qapp: QApplication) -> Iterator[None]:
    """A test leaves no top-level widget behind (napari's check): windows it opened are
    closed and deleted, so nothing from one test shows up in the next."""
    before = {id(w) for w in _top_level_widgets()}
    yield
    leaked = [w for w in _top_level_widgets() if id(w) not in before and w.isVisible()]
    names = [f"{type(w).__name__}({w.objectName() or w.windowTitle()!r})" for w in leaked]
    for widget in leaked:  # do not let one leak fail the next tests too
        widget.close()
        widget.deleteLater()
    assert not names, f"the test left top-level widgets open: {', '.join(names)}"


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
