"""A source's lines and zones as a DeepStream nvdsanalytics configuration file.

What nvdsanalytics' own parser (gst-nvdsanalytics, nvdsanalytics_property_parser.cpp) reads:
- `[property]`: `enable`, `config-width`, `config-height` (required: the resolution the
  coordinates are given in; the plugin scales them to each stream's), `osd-mode`,
  `display-font-size`;
- `[roi-filtering-stream-N]`: `enable`, `roi-LABEL=x1;y1;x2;y2;...` (a polygon),
  `inverse-roi`, `class-id` (`;`-separated, -1: every class);
- `[line-crossing-stream-N]`: `enable`, `line-crossing-LABEL=` eight integers, the direction
  (x1;y1;x2;y2: an object moving that way is counted) then the line (x1;y1;x2;y2),
  `class-id`, `extended` (0: only crossings of the segment; the parser's default is 1),
  `mode` (loose, balanced, strict: how closely the move must follow the direction).
Coordinates are non-negative integers there (the parser refuses a negative one).

Our line counts both ways; a DeepStream entry counts one direction, so each line becomes two
entries: `line-crossing-NAME` for `in` and `line-crossing-NAME-out` for `out`, with the same
segment and opposite directions at right angles to it. A zone becomes `roi-NAME`.
docs/analytics.md says what does not carry over (dwell time, events, the jitter filter).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from app.analytics.zones_file import LineSpec, Point, ZonesConfig

LABEL_CHARACTERS = re.compile(r"[^A-Za-z0-9_-]")
OUT_SUFFIX = "-out"
MODE = "loose"  # ours has no angle condition: any passage from one side to the other counts


class ExportError(ValueError):
    """The zones cannot be written as that configuration; the message says why."""


@dataclass(frozen=True)
class DeepStreamExport:
    text: str  # the configuration file
    notes: tuple[str, ...]  # what was changed on the way (renamed labels, moved points)


def export_nvdsanalytics(
    config: ZonesConfig,
    *,
    size: tuple[int, int] | None = None,
    stream: int = 0,
    class_ids: Sequence[int] = (-1,),
    origin: str = "zones",
) -> DeepStreamExport:
    """`size`: the source's (width, height), which the coordinates are in (default: the zones
    file's `size`)."""
    size = size or config.size
    if size is None:
        raise ExportError(
            f"{origin}: the source's size is not known: give it (--size WIDTHxHEIGHT) or add "
            '"size": [width, height] to the zones file (config-width and config-height need it)'
        )
    if stream < 0:
        raise ExportError(f"the stream index must be 0 or more, got {stream}")
    notes: list[str] = []
    labels = _Labels(notes)
    classes = ";".join(str(c) for c in class_ids) or "-1"
    width, height = size
    out = [
        f"# nvdsanalytics configuration written by triton-viewer from {origin}",
        f"# in {width}x{height} pixels (config-width, config-height): DeepStream scales it to the stream",
        "[property]",
        "enable=1",
        f"config-width={width}",
        f"config-height={height}",
        "osd-mode=2",
        "display-font-size=12",
        "",
    ]
    if config.zones:
        out += [f"[roi-filtering-stream-{stream}]", "enable=1"]
        for zone in config.zones:
            label = labels.name(zone.name, "roi")
            points = [_pixel(p, f"zone {zone.name!r}", notes) for p in zone.polygon]
            out.append(f"roi-{label}=" + ";".join(f"{x};{y}" for x, y in points))
        out += ["inverse-roi=0", f"class-id={classes}", ""]
    if config.lines:
        out += [f"[line-crossing-stream-{stream}]", "enable=1"]
        for line in config.lines:
            label = labels.name(line.name, "line-crossing")
            labels.claim(label + OUT_SUFFIX, "line-crossing", line.name)
            segment = [_pixel(p, f"line {line.name!r}", notes) for p in (line.a, line.b)]
            if segment[0] == segment[1]:
                raise ExportError(f"{origin}: line {line.name!r} is shorter than a pixel")
            for suffix, sign in (("", 1.0), (OUT_SUFFIX, -1.0)):
                arrow = _direction(line, sign, notes)
                values = [*arrow[0], *arrow[1], *segment[0], *segment[1]]
                out.append(f"line-crossing-{label}{suffix}=" + ";".join(str(v) for v in values))
        out += [f"class-id={classes}", "extended=0", f"mode={MODE}", ""]
    return DeepStreamExport("\n".join(out), tuple(notes))


def in_direction(line: LineSpec) -> Point:
    """The unit vector an object moves along when it crosses `in`: from the side where
    cross(b - a, p - a) > 0 to the other, at right angles to the line."""
    dx, dy = line.b[0] - line.a[0], line.b[1] - line.a[1]
    length = math.hypot(dx, dy)
    return dy / length, -dx / length


def _direction(line: LineSpec, sign: float, notes: list[str]) -> tuple[tuple[int, int], tuple[int, int]]:
    """A short arrow through the line's midpoint, along its `in` direction (sign 1) or `out`."""
    ux, uy = in_direction(line)
    ux, uy = ux * sign, uy * sign
    length = math.hypot(line.b[0] - line.a[0], line.b[1] - line.a[1])
    half = max(10.0, min(50.0, length / 4))
    mx, my = (line.a[0] + line.b[0]) / 2, (line.a[1] + line.b[1]) / 2
    where = f"line {line.name!r}'s direction"
    start = _pixel((mx - half * ux, my - half * uy), where, notes)
    end = _pixel((mx + half * ux, my + half * uy), where, notes)
    if (end[0] - start[0]) * ux + (end[1] - start[1]) * uy <= 0:
        raise ExportError(f"line {line.name!r}: its direction cannot be drawn in whole, non-negative pixels")
    return start, end


def _pixel(p: Point, where: str, notes: list[str]) -> tuple[int, int]:
    """Rounded to whole pixels; a negative coordinate (refused by nvdsanalytics) becomes 0."""
    x, y = round(p[0]), round(p[1])
    if x < 0 or y < 0:
        moved = f"({max(x, 0)}, {max(y, 0)})"
        notes.append(f"{where}: ({x}, {y}) moved to {moved}: nvdsanalytics takes no negative coordinate")
    return max(x, 0), max(y, 0)


class _Labels:
    """Labels as nvdsanalytics keys take them (letters, digits, _ and -), each used once."""

    def __init__(self, notes: list[str]) -> None:
        self.notes = notes
        self._used: dict[tuple[str, str], str] = {}

    def name(self, name: str, kind: str) -> str:
        label = LABEL_CHARACTERS.sub("_", name.strip())
        if label != name:
            self.notes.append(f"{name!r} is written as {label!r} (keys take letters, digits, _ and -)")
        self.claim(label, kind, name)
        return label

    def claim(self, label: str, kind: str, name: str) -> None:
        other = self._used.get((kind, label))
        if other is not None:
            raise ExportError(
                f"{name!r} and {other!r} would both be written as {kind}-{label}: rename one of them"
            )
        self._used[(kind, label)] = name
