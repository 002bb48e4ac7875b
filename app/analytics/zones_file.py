"""The zones file: named counting lines and zones of one source, in its pixel coordinates.

    {"lines": [{"name": "door", "a": [x, y], "b": [x, y]}],
     "zones": [{"name": "queue", "polygon": [[x, y], [x, y], [x, y], ...]}],
     "size": [width, height]}            (optional: the source's size they were drawn on)

`load_zones(path)` reads and checks one; every problem is a `ZonesFileError` naming the file
and the field (`lines[1].b`, `zones[0] 'queue'.polygon`). `ZonesConfig.outside(w, h)` lists
the points outside a frame of that size (a warning, not an error: a zone may reach past the
picture's edge on purpose). `save_zones` writes one whole or not at all (the viewer's editor).
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from typing import Any

from app.system.atomic_files import write_whole
from app.system.bounded_read import MAX_SMALL_FILE_BYTES, BoundedReadError, parse_json, read_text

Point = tuple[float, float]
TOP_LEVEL_FIELDS = ("lines", "zones", "size")
LINE_FIELDS = ("name", "a", "b")
ZONE_FIELDS = ("name", "polygon")


class ZonesFileError(ValueError):
    """A zones file that cannot be used; the message names the file and the field."""


@dataclass(frozen=True)
class LineSpec:
    """A counting line from `a` to `b`: `in` is the anchor passing from the side where
    cross(b - a, p - a) > 0 to the side where it is < 0 (in image coordinates, y down: for a
    line drawn top to bottom, left to right)."""

    name: str
    a: Point
    b: Point

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "a": list(self.a), "b": list(self.b)}


@dataclass(frozen=True)
class ZoneSpec:
    """A zone: a simple polygon (convex or not; its edges are closed back to the first point)."""

    name: str
    polygon: tuple[Point, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "polygon": [list(p) for p in self.polygon]}


@dataclass(frozen=True)
class ZonesConfig:
    lines: tuple[LineSpec, ...] = ()
    zones: tuple[ZoneSpec, ...] = ()
    size: tuple[int, int] | None = None  # (width, height) of the source they were drawn on

    @property
    def empty(self) -> bool:
        return not self.lines and not self.zones

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "lines": [line.to_dict() for line in self.lines],
            "zones": [zone.to_dict() for zone in self.zones],
        }
        if self.size is not None:
            data["size"] = list(self.size)
        return data

    @classmethod
    def from_dict(cls, data: Any, origin: str = "zones") -> ZonesConfig:
        """Checked; `origin` (the file's name) starts every message."""
        return _Reader(origin).config(data)

    def outside(self, width: int, height: int) -> list[str]:
        """One warning per line or zone with a point outside a `width` x `height` frame."""
        warnings = []
        for i, line in enumerate(self.lines):
            if any(not _within(p, width, height) for p in (line.a, line.b)):
                warnings.append(f"lines[{i}] {line.name!r} reaches outside the {width}x{height} frame")
        for i, zone in enumerate(self.zones):
            if any(not _within(p, width, height) for p in zone.polygon):
                warnings.append(f"zones[{i}] {zone.name!r} reaches outside the {width}x{height} frame")
        return warnings


def _within(p: Point, width: int, height: int) -> bool:
    return 0 <= p[0] <= width and 0 <= p[1] <= height


def load_zones(path: str | os.PathLike[str]) -> ZonesConfig:
    """The zones file at `path`, checked (ZonesFileError naming the file and the cause)."""
    name = os.fspath(path)
    try:
        data = parse_json(read_text(path, MAX_SMALL_FILE_BYTES, name), name)
    except BoundedReadError as e:
        raise ZonesFileError(str(e)) from None
    except json.JSONDecodeError as e:
        raise ZonesFileError(f"{name}: not JSON ({e.msg} at line {e.lineno}, column {e.colno})") from None
    return ZonesConfig.from_dict(data, name)


def save_zones(config: ZonesConfig, path: str | os.PathLike[str]) -> None:
    """Write `config` to `path` whole or not at all (OSError naming `path`)."""
    write_whole(path, json.dumps(config.to_dict(), indent=2) + "\n")


class _Reader:
    """Checks the parsed JSON, naming `origin` and the field in every message."""

    def __init__(self, origin: str) -> None:
        self.origin = origin

    def fail(self, where: str, problem: str) -> ZonesFileError:
        return ZonesFileError(f"{self.origin}: {where}: {problem}")

    def config(self, data: Any) -> ZonesConfig:
        if not isinstance(data, dict):
            raise ZonesFileError(
                f'{self.origin}: expected an object {{"lines": [...], "zones": [...]}}, got {_kind(data)}'
            )
        self.known_fields(data, TOP_LEVEL_FIELDS, "the file")
        lines = tuple(self.line(i, item) for i, item in enumerate(self.array(data, "lines")))
        zones = tuple(self.zone(i, item) for i, item in enumerate(self.array(data, "zones")))
        if not lines and not zones:
            raise ZonesFileError(f"{self.origin}: no lines and no zones: nothing to count")
        self.unique([(f"lines[{i}]", line.name) for i, line in enumerate(lines)], "line")
        self.unique([(f"zones[{i}]", zone.name) for i, zone in enumerate(zones)], "zone")
        return ZonesConfig(lines, zones, self.size(data.get("size")))

    def known_fields(self, data: dict[str, Any], known: tuple[str, ...], where: str) -> None:
        unknown = [k for k in data if k not in known]
        if unknown:
            raise self.fail(
                where, f"unknown field {unknown[0]!r} (the fields are {', '.join(repr(k) for k in known)})"
            )

    def array(self, data: dict[str, Any], key: str) -> list[Any]:
        value = data.get(key, [])
        if not isinstance(value, list):
            raise self.fail(key, f"expected a list, got {_kind(value)}")
        return value

    def entry(self, where: str, item: Any, fields: tuple[str, ...]) -> tuple[str, str]:
        """(its name, `where` with the name) after checking it is an object with a name."""
        if not isinstance(item, dict):
            raise self.fail(where, f"expected an object with {', '.join(fields)}, got {_kind(item)}")
        self.known_fields(item, fields, where)
        name = item.get("name")
        if not isinstance(name, str) or not name.strip():
            raise self.fail(f"{where}.name", f"expected a non-empty name, got {_kind(name)}")
        return name, f"{where} {name!r}"

    def line(self, i: int, item: Any) -> LineSpec:
        name, where = self.entry(f"lines[{i}]", item, LINE_FIELDS)
        a = self.point(item.get("a"), f"{where}.a")
        b = self.point(item.get("b"), f"{where}.b")
        if a == b:
            raise self.fail(where, f"a and b are the same point {list(a)}: a line of zero length")
        return LineSpec(name, a, b)

    def zone(self, i: int, item: Any) -> ZoneSpec:
        name, where = self.entry(f"zones[{i}]", item, ZONE_FIELDS)
        points = item.get("polygon")
        if not isinstance(points, list):
            raise self.fail(f"{where}.polygon", f"expected a list of [x, y] points, got {_kind(points)}")
        polygon = tuple(self.point(p, f"{where}.polygon[{j}]") for j, p in enumerate(points))
        if len(polygon) < 3:
            raise self.fail(
                f"{where}.polygon", f"{len(polygon)} point(s): a zone needs at least 3 (a polygon)"
            )
        if abs(_area(polygon)) == 0:
            raise self.fail(f"{where}.polygon", "its points are on one line: the zone has no area")
        return ZoneSpec(name, polygon)

    def point(self, value: Any, where: str) -> Point:
        if not isinstance(value, list) or len(value) != 2:
            raise self.fail(where, f"expected a point [x, y], got {_kind(value)}")
        x, y = value
        for axis, v in (("x", x), ("y", y)):
            if isinstance(v, bool) or not isinstance(v, int | float):
                raise self.fail(where, f"{axis} is not a number: {json.dumps(v)}")
            if not math.isfinite(v):
                raise self.fail(where, f"{axis} is not a finite number: {v}")
        return float(x), float(y)

    def unique(self, named: list[tuple[str, str]], kind: str) -> None:
        seen: dict[str, str] = {}
        for where, name in named:
            if name in seen:
                raise self.fail(where, f"{kind} name {name!r} is already used by {seen[name]}")
            seen[name] = where

    def size(self, value: Any) -> tuple[int, int] | None:
        if value is None:
            return None
        ok = (
            isinstance(value, list)
            and len(value) == 2
            and all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value)
        )
        if not ok:
            raise self.fail("size", f"expected [width, height] in whole pixels, got {json.dumps(value)}")
        return int(value[0]), int(value[1])


def _area(polygon: tuple[Point, ...]) -> float:
    """Twice the signed area (shoelace)."""
    return sum(
        x0 * y1 - x1 * y0 for (x0, y0), (x1, y1) in zip(polygon, polygon[1:] + polygon[:1], strict=True)
    )


def _kind(value: Any) -> str:
    """What a value is, for a message: the JSON type, with the value when short."""
    text = json.dumps(value)
    kind = {
        dict: "an object",
        list: "a list",
        str: "a string",
        bool: "a boolean",
        type(None): "null",
    }.get(type(value), "a number")
    return f"{kind} {text}" if len(text) <= 40 else kind
