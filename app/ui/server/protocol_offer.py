"""The offer made when a connect reaches a port of the other protocol: "that is Triton's HTTP
port: connect over HTTP?" (or its gRPC port, asked over HTTP)."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtWidgets import QMessageBox, QWidget

from app.inference.protocol import ServerProtocol, protocol_of


def offer_protocol(parent: QWidget, url: str, message: str, on_accept: Callable[[], None]) -> QMessageBox:
    """A window-modal question opened with open(), not exec(): no nested event loop, so the
    qasync loop keeps running underneath. `on_accept()` when the user takes the offer."""
    over = protocol_of(url)
    port = "HTTP" if over is ServerProtocol.HTTP else "gRPC"
    box = QMessageBox(parent)
    box.setObjectName("protocol_offer")
    box.setIcon(QMessageBox.Icon.Question)
    # The question once (the text); the title and the rest say what and where, the error in
    # the details (its own words ask the command line's question again).
    box.setWindowTitle(f"Triton's {port} port")
    box.setText(f"That is Triton's {port} port: connect over {over.label}?")
    box.setInformativeText(f"The viewer would connect to {url}.")
    box.setDetailedText(message)
    accept = box.addButton(f"Connect over {over.label}", QMessageBox.ButtonRole.AcceptRole)
    box.addButton(QMessageBox.StandardButton.Cancel)
    box.setDefaultButton(accept)
    box.buttonClicked.connect(lambda button: on_accept() if button is accept else None)
    box.open()
    return box
