"""`ZonesDraft`: the lines and zones of one source as the viewer's editor changes them (drawn
with the mouse, a vertex dragged, renamed, deleted), always a valid `ZonesConfig` when read
with `config()`. Qt-free: the editor (app/ui/zones/) maps the mouse to source pixels and
calls these; hit-testing is here too, in source pixels with a radius the editor gives (its
few screen pixels at the current zoom)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from app.analytics.zones_file import LineSpec, Point, ZonesConfig, ZoneSpec

Kind = Literal["line", "zone"]
MIN_LINE_LENGTH = 2.0  # source pixels: a click without a drag is no line


@dataclass(frozen=True)
class Handle:
    """A vertex of a shape: the `vertex`-th point of the `index`-th line or zone."""

    kind: Kind
    index: int
    vertex: int


class ZonesDraft:
    def __init__(self, config: ZonesConfig | None = None) -> None:
        config = config or ZonesConfig()
        self.lines: list[LineSpec] = list(config.lines)
        self.zones: list[ZoneSpec] = list(config.zones)
        self.size = config.size

    def config(self) -> ZonesConfig:
        return ZonesConfig(tuple(self.lines), tuple(self.zones), self.size)

    @property
    def empty(self) -> bool:
        return not self.lines and not self.zones

    # -- adding ---------------------------------------------------------------------------------
    def new_name(self, kind: Kind) -> str:
        """ "line 1", "zone 2", ...: the first number not used by a shape of that kind."""
        used = self.names(kind)
        n = 1
        while f"{kind} {n}" in used:
            n += 1
        return f"{kind} {n}"

    def names(self, kind: Kind) -> set[str]:
        shapes: list[LineSpec] | list[ZoneSpec] = self.lines if kind == "line" else self.zones
        return {shape.name for shape in shapes}

    def add_line(self, a: Point, b: Point, name: str | None = None) -> str | None:
        """A line from `a` to `b` (its `in` side: see LineSpec); None when too short."""
        if math.dist(a, b) < MIN_LINE_LENGTH:
            return None
        name = name or self.new_name("line")
        self.lines.append(LineSpec(name, _point(a), _point(b)))
        return name

    def add_zone(self, points: list[Point], name: str | None = None) -> str | None:
        """A zone through `points` (closed back to the first); None with fewer than 3 points or
        no area (points in a row)."""
        polygon = tuple(_point(p) for p in points)
        if len(polygon) < 3 or _area(polygon) == 0:
            return None
        name = name or self.new_name("zone")
        self.zones.append(ZoneSpec(name, polygon))
        return name

    # -- changing -------------------------------------------------------------------------------
    def rename(self, kind: Kind, index: int, name: str) -> None:
        """ValueError for an empty name or one another shape of that kind has."""
        name = name.strip()
        if not name:
            raise ValueError("a name cannot be empty")
        current = self.lines[index].name if kind == "line" else self.zones[index].name
        if name != current and name in self.names(kind):
            raise ValueError(f"another {kind} is already named {name!r}")
        if kind == "line":
            line = self.lines[index]
            self.lines[index] = LineSpec(name, line.a, line.b)
        else:
            self.zones[index] = ZoneSpec(name, self.zones[index].polygon)

    def delete(self, kind: Kind, index: int) -> None:
        if kind == "line":
            del self.lines[index]
        else:
            del self.zones[index]

    def swap(self, index: int) -> None:
        """The line's ends swapped: its `in` and `out` too."""
        line = self.lines[index]
        self.lines[index] = LineSpec(line.name, line.b, line.a)

    def move(self, handle: Handle, point: Point) -> bool:
        """Move a vertex; False (nothing changed) when that would leave a line of no length or
        a zone of no area."""
        point = _point(point)
        if handle.kind == "line":
            line = self.lines[handle.index]
            a, b = (point, line.b) if handle.vertex == 0 else (line.a, point)
            if math.dist(a, b) < MIN_LINE_LENGTH:
                return False
            self.lines[handle.index] = LineSpec(line.name, a, b)
            return True
        zone = self.zones[handle.index]
        polygon = list(zone.polygon)
        polygon[handle.vertex] = point
        if _area(tuple(polygon)) == 0:
            return False
        self.zones[handle.index] = ZoneSpec(zone.name, tuple(polygon))
        return True

    def point_of(self, handle: Handle) -> Point:
        if handle.kind == "line":
            line = self.lines[handle.index]
            return line.a if handle.vertex == 0 else line.b
        return self.zones[handle.index].polygon[handle.vertex]

    # -- hit-testing (source pixels) ------------------------------------------------------------------
    def vertex_at(self, p: Point, radius: float) -> Handle | None:
        """The nearest vertex within `radius` of `p` (lines first: their ends are on top)."""
        best: tuple[float, Handle] | None = None
        for i, line in enumerate(self.lines):
            for v, q in enumerate((line.a, line.b)):
                d = math.dist(p, q)
                if d <= radius and (best is None or d < best[0]):
                    best = (d, Handle("line", i, v))
        if best is not None:
            return best[1]
        for i, zone in enumerate(self.zones):
            for v, q in enumerate(zone.polygon):
                d = math.dist(p, q)
                if d <= radius and (best is None or d < best[0]):
                    best = (d, Handle("zone", i, v))
        return best[1] if best is not None else None

    def shape_at(self, p: Point, radius: float) -> tuple[Kind, int] | None:
        """The line passing within `radius` of `p`, else the (last drawn) zone holding `p`."""
        for i, line in enumerate(self.lines):
            if _segment_distance(p, line.a, line.b) <= radius:
                return "line", i
        for i in range(len(self.zones) - 1, -1, -1):
            polygon = self.zones[i].polygon
            if _inside(p, polygon) or any(
                _segment_distance(p, a, b) <= radius
                for a, b in zip(polygon, polygon[1:] + polygon[:1], strict=True)
            ):
                return "zone", i
        return None


def _point(p: Point) -> Point:
    return round(float(p[0]), 1), round(float(p[1]), 1)


def _area(polygon: tuple[Point, ...]) -> float:
    return sum(
        x0 * y1 - x1 * y0 for (x0, y0), (x1, y1) in zip(polygon, polygon[1:] + polygon[:1], strict=True)
    )


def _segment_distance(p: Point, a: Point, b: Point) -> float:
    ax, ay = a
    dx, dy = b[0] - ax, b[1] - ay
    length2 = dx * dx + dy * dy
    t = 0.0 if length2 == 0 else max(0.0, min(1.0, ((p[0] - ax) * dx + (p[1] - ay) * dy) / length2))
    return math.dist(p, (ax + t * dx, ay + t * dy))


def _inside(p: Point, polygon: tuple[Point, ...]) -> bool:
    """Even-odd rule, as the counting's zones (app.analytics.geometry)."""
    x, y = p
    inside = False
    for (x0, y0), (x1, y1) in zip(polygon, polygon[1:] + polygon[:1], strict=True):
        if (y0 > y) != (y1 > y) and x < x0 + (y - y0) * (x1 - x0) / (y1 - y0):
            inside = not inside
    return inside
