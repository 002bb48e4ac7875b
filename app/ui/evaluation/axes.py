"""Axis titles the evaluation's plots share (the PR curves, the confusion matrix)."""

from __future__ import annotations

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QPainter


def upright_title(painter: QPainter, x: float, top: float, height: float, line: float, text: str) -> None:
    """`text` written bottom to top at `x`, centred on the span `top`..`top + height`."""
    painter.save()
    painter.translate(x, top + height / 2)
    painter.rotate(-90)
    painter.drawText(QRectF(-height / 2, 0, height, line), Qt.AlignmentFlag.AlignHCenter, text)
    painter.restore()
