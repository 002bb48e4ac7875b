"""WallWidget: the tiles in a grid (as square as their number allows), under one line of the
wall's overall figures."""

from __future__ import annotations

import math
from collections.abc import Sequence

from PySide6.QtWidgets import QGridLayout, QVBoxLayout, QWidget

from app.ui.wall.stream_tile import StreamTile
from app.ui.widgets.elided_label import ElidedLabel


def grid_columns(count: int) -> int:
    """Columns for `count` tiles: 1, 2 up to 4 tiles, 3 up to 9, then 4 (rows follow)."""
    if count <= 1:
        return 1
    return min(4, math.ceil(math.sqrt(count)))


class WallWidget(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("Wall")
        self.summary = ElidedLabel("")
        self.summary.setToolTip(
            "Every stream of the wall: frames shown per second, the worst latency, frames dropped"
        )
        self.grid = QGridLayout()
        self.grid.setContentsMargins(0, 0, 0, 0)
        self.grid.setSpacing(4)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addWidget(self.summary)
        layout.addLayout(self.grid, 1)
        self._shape = (0, 0)

    def set_tiles(self, tiles: Sequence[StreamTile]) -> None:
        """Lay `tiles` out in order, left to right then top to bottom, every cell the same size."""
        while self.grid.count():
            self.grid.takeAt(0)
        columns = grid_columns(len(tiles))
        rows = math.ceil(len(tiles) / columns) if tiles else 0
        old_rows, old_columns = self._shape
        for r in range(max(rows, old_rows)):
            self.grid.setRowStretch(r, 1 if r < rows else 0)
        for c in range(max(columns, old_columns)):
            self.grid.setColumnStretch(c, 1 if c < columns else 0)
        for i, tile in enumerate(tiles):
            self.grid.addWidget(tile, i // columns, i % columns)
            tile.show()
        self._shape = (rows, columns)

    def shape(self) -> tuple[int, int]:
        """(rows, columns) of the grid now."""
        return self._shape
