"""The first screen: what the window is for and the ways to start, as a drop target."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QGridLayout, QLabel, QPushButton, QSizePolicy, QVBoxLayout, QWidget


class EmptyState(QWidget):
    """Emits `open_images`, `open_folder`, `open_camera`, `try_sample` (the buttons)."""

    open_images = Signal()
    open_folder = Signal()
    open_camera = Signal()
    try_sample = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("EmptyState")
        self.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
        self.setStyleSheet(
            "#EmptyState { background: #282828; }"
            "#EmptyState QLabel { color: #e6e6e6; }"
            "#EmptyState QLabel#EmptySubtitle { color: #b8b8b8; }"
        )
        self.title = QLabel("Drop images or a folder here")
        font = self.title.font()
        font.setPointSizeF(font.pointSizeF() * 1.6)
        font.setBold(True)
        self.title.setFont(font)
        self.subtitle = QLabel(
            "Each image is sent to the model on the server; its boxes appear here with the "
            "request statistics beside. A camera, a video file or a stream plays live."
        )
        self.subtitle.setObjectName("EmptySubtitle")
        self.subtitle.setWordWrap(True)
        self.server_line = QLabel("")
        self.server_line.setObjectName("EmptySubtitle")
        self.server_line.setWordWrap(True)
        for label in (self.title, self.subtitle, self.server_line):
            label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.sample_button = QPushButton("Try the sample")
        self.sample_button.setToolTip("Run the bundled photograph through the model")
        self.sample_button.setDefault(True)
        self.images_button = QPushButton("Open images…")
        self.folder_button = QPushButton("Open folder…")
        self.camera_button = QPushButton("Open camera…")
        self.camera_button.setToolTip("A camera, a video file or a stream URL, played live")
        buttons = QGridLayout()
        buttons.setHorizontalSpacing(8)
        buttons.setVerticalSpacing(8)
        buttons.addWidget(self.sample_button, 0, 0, 1, 3)
        for col, button in enumerate((self.images_button, self.folder_button, self.camera_button)):
            buttons.addWidget(button, 1, col)
        for button in (self.sample_button, self.images_button, self.folder_button, self.camera_button):
            button.setMinimumHeight(button.sizeHint().height() + 8)
            button.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        column = QWidget()
        column.setMaximumWidth(560)
        inner = QVBoxLayout(column)
        inner.setSpacing(12)
        inner.addWidget(self.title)
        inner.addWidget(self.subtitle)
        inner.addSpacing(8)
        inner.addLayout(buttons)
        inner.addWidget(self.server_line)
        outer = QVBoxLayout(self)
        outer.addStretch(1)
        outer.addWidget(column, 0, Qt.AlignmentFlag.AlignHCenter)
        outer.addStretch(1)
        self.sample_button.clicked.connect(self.try_sample)
        self.images_button.clicked.connect(self.open_images)
        self.folder_button.clicked.connect(self.open_folder)
        self.camera_button.clicked.connect(self.open_camera)
        self.setMinimumSize(64, 64)

    def set_server_text(self, text: str) -> None:
        """A line under the buttons: e.g. "Connected to … · model face_detector"."""
        self.server_line.setText(text)
