"""First run without a usable local server: ask for the address of a Triton server."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtWidgets import QInputDialog, QLabel, QLineEdit, QWidget

from app.ui.base.window_fit import secondary_window
from app.ui.server.server_panel import parse_urls


def ask_for_server(
    parent: QWidget, reason: str, suggestion: str, on_accept: Callable[[list[str]], None]
) -> QInputDialog:
    """A window-modal dialog opened with open(), not exec(): no nested event loop, so the
    qasync loop keeps running underneath. `on_accept(urls)` gets the addresses typed."""
    dialog = QInputDialog(parent)
    dialog.setObjectName("server_dialog")
    dialog.setWindowTitle("Connect to a Triton server")
    dialog.setLabelText(
        f"{reason}\n\nEnter the address of a Triton server (HOST:PORT for gRPC, usually port 8001, "
        "or http://HOST:PORT for HTTP, usually port 8000; any KServe v2 server; several separated "
        "by commas):"
    )
    dialog.setTextEchoMode(QLineEdit.EchoMode.Normal)
    dialog.setTextValue(suggestion)
    dialog.setOkButtonText("Connect")
    # The reason can be long: wrap it in a dialog of reasonable width.
    for label in dialog.findChildren(QLabel):
        label.setWordWrap(True)
    dialog.setFixedWidth(600)
    secondary_window(dialog)
    dialog.textValueSelected.connect(lambda text: on_accept(parse_urls(text)) if text.strip() else None)
    dialog.open()
    return dialog
