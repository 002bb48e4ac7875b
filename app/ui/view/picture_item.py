"""The picture under the annotations: a QImage over the frame's own buffer, drawn over the
scene rectangle of the source's size, whatever size the picture was decoded at."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QRectF
from PySide6.QtGui import QImage, QPainter
from PySide6.QtWidgets import QGraphicsItem, QStyleOptionGraphicsItem, QWidget

from app.ui.base.qimage import rgb_to_qimage


def picture_qimage(picture: np.ndarray) -> tuple[QImage, np.ndarray | None]:
    """(the QImage to draw, the buffer it reads from, to keep alive while it is drawn).

    An H x W x 4 picture is a live frame's display buffer (B, G, R, 255: Qt's RGB32 words,
    app.sources.grabs.bgr_to_display): wrapped, not copied, and drawn without conversion. An
    RGB (or gray) picture is copied once into RGB32, the format Qt draws fastest (a batch
    image, painted again at every pan and zoom)."""
    if picture.ndim == 3 and picture.shape[2] == 4 and picture.dtype == np.uint8:
        words = np.ascontiguousarray(picture)
        h, w = words.shape[:2]
        return QImage(words.data, w, h, words.strides[0], QImage.Format.Format_RGB32), words
    return rgb_to_qimage(picture).convertToFormat(QImage.Format.Format_RGB32), None


class PictureItem(QGraphicsItem):
    """Draws its QImage scaled onto (0, 0, width, height) in scene units (source pixels)."""

    def __init__(self, parent: QGraphicsItem | None = None) -> None:
        super().__init__(parent)
        self._image = QImage()
        self._buffer: np.ndarray | None = None  # what `_image` reads from: alive while shown
        self._rect = QRectF()

    def set_picture(self, picture: np.ndarray | None, size: tuple[int, int] | None = None) -> None:
        """Show `picture` over a `size` (width, height; default: its own) area; None: nothing."""
        if picture is None:
            image, buffer, rect = QImage(), None, QRectF()
        else:
            image, buffer = picture_qimage(picture)
            w, h = size or (picture.shape[1], picture.shape[0])
            rect = QRectF(0, 0, w, h)
        if rect != self._rect:
            self.prepareGeometryChange()
        # The old buffer is let go only now that the item no longer draws from it.
        self._image, self._buffer, self._rect = image, buffer, rect
        self.update()

    def image(self) -> QImage:
        """The picture at its own (decoded) size."""
        return self._image

    def boundingRect(self) -> QRectF:
        return self._rect

    def paint(
        self, painter: QPainter, option: QStyleOptionGraphicsItem, widget: QWidget | None = None
    ) -> None:
        if not self._image.isNull():
            painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform, True)
            painter.drawImage(self._rect, self._image)
