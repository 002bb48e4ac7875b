"""The viewer over HTTP: against MLServer (a KServe v2 server that is not Triton) with the right
boxes and what it lacks said once; and against Triton's HTTP port, given as gRPC first: the
offer "that is Triton's HTTP port: connect over HTTP?" taken, then connected over HTTP."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PySide6.QtWidgets import QMessageBox

from app.inference.introspection.extensions import MISSING, Extension
from app.inference.protocol import ServerProtocol
from app.pipeline.connection.state import ConnectionState
from app.server.embedded import EmbeddedServer
from tests.integration.test_mlserver import expected_boxes
from tests.mlserver.server import MLServer
from tests.ui.viewer_fixtures import Harness, until, write_png

pytestmark = [pytest.mark.gui]


def test_the_viewer_shows_mlservers_boxes(harness: Harness, mlserver: MLServer, tmp_path: Path) -> None:
    image = write_png(tmp_path / "wide.png", np.full((480, 640, 3), 90, np.uint8))
    viewer = harness.viewer(mlserver.http_url, "boxes_yolo", open_paths=[str(image)])
    harness.connected(viewer)
    session = viewer.connection.session
    assert session is not None and session.protocol is ServerProtocol.HTTP
    harness.run(until(lambda: len(viewer.gallery.results) == 1, what="the result"))
    (result,) = viewer.gallery.results.values()
    assert result.ok, result.error
    want = expected_boxes("boxes_yolo", 480, 640)
    assert [d.class_id for d in result.detections] == [cls for _, cls, _ in want]
    for detection, (box, _cls, _score) in zip(result.detections, want, strict=True):
        assert list(detection.box) == pytest.approx(box, abs=1.0)
    # What the server lacks, next to the transport; the time split says it has no statistics.
    transport = viewer.window.server_panel.transport_label.text()
    assert MISSING[Extension.SHARED_MEMORY] in transport and MISSING[Extension.CONFIG] in transport
    harness.run(until(lambda: bool(viewer.server_split.unavailable), what="the statistics note"))
    note = viewer.server_split.widget.note
    harness.run(until(lambda: note.text() == MISSING[Extension.STATISTICS], what="the note shown"))
    assert "max batch" not in viewer.window.server_panel.details.toPlainText()


def test_triton_s_http_port_asked_over_grpc_is_offered_over_http(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    viewer = harness.viewer(triton.http_url, "fixed_efficientnms")  # a bare HOST:PORT is gRPC
    harness.run(until(lambda: viewer.connection_ui.protocol_offer is not None, what="the offer"))
    offer = viewer.connection_ui.protocol_offer
    assert isinstance(offer, QMessageBox) and offer.isVisible()
    assert offer.text() == "That is Triton's HTTP port: connect over HTTP?"
    assert f"http://{triton.http_url}" in offer.informativeText()
    # The question is asked once: not again in the title or the text under it.
    said = " ".join((offer.windowTitle(), offer.text(), offer.informativeText()))
    assert said.count("?") == 1 and said.lower().count("connect over") == 1, said
    assert "connect over HTTP?" in offer.detailedText(), "the error itself, in the details"
    accept = next(b for b in offer.buttons() if b.text() == "Connect over HTTP")
    accept.click()
    harness.connected(viewer)
    session = viewer.connection.session
    assert session is not None and session.protocol is ServerProtocol.HTTP
    assert session.urls == [f"http://{triton.http_url}"]
    assert session.info is not None and session.info.name == "fixed_efficientnms"  # the model asked for
    assert viewer.window.server_panel.url_combo.currentText() == f"http://{triton.http_url}"
    image = write_png(tmp_path / "a.png", np.full((300, 400, 3), 60, np.uint8))
    viewer.open_paths([str(image)])
    harness.run(until(lambda: len(viewer.gallery.results) == 1, what="the result"))
    (result,) = viewer.gallery.results.values()
    assert result.ok and len(result.detections) == 2, result.error


def test_an_address_that_cannot_be_a_servers_is_said_as_a_failed_connect(
    harness: Harness, triton: EmbeddedServer
) -> None:
    viewer = harness.viewer(triton.grpc_url, "face_detector")
    harness.connected(viewer)
    viewer.window.server_panel.url_combo.setCurrentText("ftp://h:21")
    viewer.window.server_panel.connect_button.click()
    harness.run(until(lambda: viewer.connection.state is ConnectionState.FAILED, what="the failure"))
    assert viewer.connection.manager.detail.startswith("ftp://h:21: unknown scheme 'ftp://' (use http://")
    assert "Failed</b> · ftp://h:21: unknown scheme" in viewer.window.server_panel.state_text()
    assert viewer.connection.session is None  # the connect asked for replaced the session open
