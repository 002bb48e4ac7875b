"""Draws packaging/icons/triton-viewer.png (256x256): a stylised eye inside a detection box.

Run once when the design changes (`python packaging/make_icon.py`); the PNG is committed.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QGuiApplication, QImage, QPainter, QPainterPath, QPen

SIZE = 256
OUT = Path(__file__).resolve().parent / "icons" / "triton-viewer.png"


def draw(size: int = SIZE) -> QImage:
    image = QImage(size, size, QImage.Format.Format_ARGB32)
    image.fill(Qt.GlobalColor.transparent)
    p = QPainter(image)
    p.setRenderHint(QPainter.RenderHint.Antialiasing)
    s = size / 256.0
    # Rounded dark tile.
    p.setPen(Qt.PenStyle.NoPen)
    p.setBrush(QBrush(QColor("#1f2a36")))
    p.drawRoundedRect(QRectF(8 * s, 8 * s, 240 * s, 240 * s), 40 * s, 40 * s)
    # The eye: an almond shape with an iris and a pupil.
    eye = QPainterPath()
    eye.moveTo(40 * s, 128 * s)
    eye.quadTo(128 * s, 40 * s, 216 * s, 128 * s)
    eye.quadTo(128 * s, 216 * s, 40 * s, 128 * s)
    p.setBrush(QBrush(QColor("#f4f6f8")))
    p.drawPath(eye)
    p.setBrush(QBrush(QColor("#76b900")))  # NVIDIA-ish green iris
    p.drawEllipse(QPointF(128 * s, 128 * s), 36 * s, 36 * s)
    p.setBrush(QBrush(QColor("#10161c")))
    p.drawEllipse(QPointF(128 * s, 128 * s), 16 * s, 16 * s)
    # The detection box corners around it.
    pen = QPen(QColor("#ffb000"), 12 * s)
    pen.setCapStyle(Qt.PenCapStyle.RoundCap)
    p.setPen(pen)
    a, b, c = 36 * s, 220 * s, 40 * s  # box from a to b, corner length c
    for x, y, dx, dy in ((a, a, 1, 1), (b, a, -1, 1), (a, b, 1, -1), (b, b, -1, -1)):
        p.drawLine(QPointF(x, y), QPointF(x + dx * c, y))
        p.drawLine(QPointF(x, y), QPointF(x, y + dy * c))
    p.end()
    return image


def main() -> int:
    _app = QGuiApplication(sys.argv)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    if not draw().save(str(OUT), "PNG"):
        print(f"could not write {OUT}", file=sys.stderr)
        return 1
    print(OUT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
