"""No usable local server (as in a packaged app without a suitable Python): the viewer
connects to the server remembered, or asks for one."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from PySide6.QtWidgets import QDialog

from app.server.embedded import EmbeddedServer
from app.ui.base.settings import ViewerSettings
from app.ui.viewer import Viewer, ViewerOptions
from tests.ui.viewer_fixtures import Harness, until

pytestmark = [pytest.mark.gui]


def start_without_local_server(harness: Harness, tmp_path: Path) -> Viewer:
    # A tritonserver that is not there: the embedded server cannot run at all.
    options = ViewerOptions(urls=[], tritonserver=str(tmp_path / "no-tritonserver"))
    viewer = Viewer(options, harness.executor)
    harness.viewers.append(viewer)
    viewer.window.show()
    viewer.start()
    return viewer


def test_asks_for_a_server_and_connects_to_it(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    viewer = start_without_local_server(harness, tmp_path)
    harness.run(
        until(lambda: (d := viewer.connection_ui.server_dialog) is not None and d.isVisible(), what="dialog")
    )
    dialog = viewer.connection_ui.server_dialog
    assert dialog is not None
    assert "no-tritonserver" in dialog.labelText()  # says why the local server cannot run
    assert viewer.connection.state == "failed"
    dialog.setTextValue(triton.grpc_url)
    dialog.done(QDialog.DialogCode.Accepted)
    harness.connected(viewer)
    assert viewer.connection.urls == [triton.grpc_url]
    assert ViewerSettings().recent_servers()[0] == triton.grpc_url  # remembered for next time


def test_connects_to_the_remembered_server_without_asking(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    ViewerSettings().remember_server(triton.grpc_url)
    viewer = start_without_local_server(harness, tmp_path)
    harness.connected(viewer)
    assert viewer.connection.urls == [triton.grpc_url]
    assert viewer.connection_ui.server_dialog is None


def test_closing_while_a_connect_hangs_abandons_it(harness: Harness, tmp_path: Path) -> None:
    with socket.socket() as silent:  # accepts TCP connections, never answers gRPC
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        viewer = harness.viewer(f"127.0.0.1:{silent.getsockname()[1]}")
        harness.run(until(lambda: viewer.connection.opening is not None, what="connecting"))
        opening = viewer.connection.opening
        assert opening is not None and opening.state == "opening"
        harness.close(viewer)
        # Interrupted at once, not left blocked until its 5 s deadline.
        harness.run(until(lambda: opening.state == "closed", timeout=2.0, what="the connect to end"))
