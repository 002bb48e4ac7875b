"""Quitting after the Compare window was used and closed (its dialog deleted): no traceback,
the batch running is cancelled, every session closed, the viewer gone within 3 s."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest
from PySide6.QtCore import QEvent
from PySide6.QtWidgets import QApplication

from app.inference.core.session import SessionState
from app.server.embedded import EmbeddedServer
from tests.ui.viewer_fixtures import Harness, image_folder, slow_image, until

pytestmark = [pytest.mark.gui, pytest.mark.slow]
QUIT_WITHIN_S = 3.0  # the bound: a hang would wait much longer


def test_quit_after_using_compare_cancels_everything_without_a_traceback(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    viewer = harness.viewer(triton.grpc_url, "slow_faces")
    harness.connected(viewer)
    analysis = viewer.analysis
    analysis.ask_compare()  # Analyse > Compare with…
    dialog = analysis.dialog
    assert dialog is not None
    dialog.model_b.setCurrentText("face_detector")
    dialog.accept()
    compare = analysis.compare
    harness.run(until(lambda: compare.window.isVisible() and compare.active, what="the compare window"))
    compare.window.close()  # the user closes it; the dialog was deleted after it closed
    QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    QApplication.processEvents()
    compare_sessions = list(compare.sessions.values())

    folder = image_folder(tmp_path / "slow", 64, slow_image(1000))
    viewer.open_paths([str(folder)])
    session = viewer.connection.session
    assert session is not None
    harness.run(until(lambda: session.in_flight > 0, what="requests in flight"))
    job = viewer.runner.latest_job()
    assert job is not None

    caplog.clear()
    started = time.monotonic()
    viewer.request_close()
    harness.run(viewer.closed.wait(), timeout=QUIT_WITHIN_S)
    print(f"closed in {time.monotonic() - started:.2f} s")
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert not errors, [(r.getMessage(), r.exc_text) for r in errors]
    assert job.cancelled and job.wait(5.0), "the batch was cancelled and ended"
    counts = job.counts()
    assert counts.ok < counts.total and counts.cancelled + counts.not_started > 0, counts
    assert session.state is SessionState.CLOSED
    assert all(s.state is SessionState.CLOSED for s in compare_sessions)
    assert viewer.connection.session is None
