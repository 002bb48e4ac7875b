"""HeatItem: a stream's heat map painted over its picture (the map's RGBA layer, at four pixels
per cell, stretched over the source's pixels): no blending of frames on the GUI thread."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import QImage, QPixmap, QTransform
from PySide6.QtWidgets import QGraphicsItem, QGraphicsPixmapItem


class HeatItem(QGraphicsPixmapItem):
    def __init__(self, parent: QGraphicsItem | None = None) -> None:
        super().__init__(parent)
        self.setZValue(0.8)  # over the picture and semantic masks, under the boxes
        self.setTransformationMode(Qt.TransformationMode.SmoothTransformation)
        self.setVisible(False)

    def set_layer(self, rgba: np.ndarray, size: tuple[int, int]) -> None:
        """`rgba`: H x W x 4 straight alpha (HeatMap.layer_rgba); `size`: the source's (w, h)."""
        rgba = np.ascontiguousarray(rgba)
        h, w = rgba.shape[:2]
        image = QImage(rgba.data, w, h, rgba.strides[0], QImage.Format.Format_RGBA8888)
        self.setPixmap(QPixmap.fromImage(image))  # (fromImage copies: `rgba` may go after)
        self.setTransform(QTransform.fromScale(size[0] / max(w, 1), size[1] / max(h, 1)))
