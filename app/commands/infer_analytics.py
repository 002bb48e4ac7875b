"""`infer --zones FILE` and `infer --heatmap PATH`: the lines, zones and heat map of each video,
fed its tracked frames in frame order (app.analytics does the counting; this adapts it to
infer's records, summary and files).

- Each video gets its own `StreamAnalytics` (its own tracks, counts and heat map); time is
  frame / the container's frame rate.
- Event records go beside the frame records (after the record of the frame that decided
  them); the visits still open when the run ends close after every frame (reason "ended").
- The summary's "analytics": the run's totals in the shape of one video's, and "by_source"
  (each video's) when there is more than one video (docs/analytics.md).
- Heat maps: one PNG per video, drawn over its first frame.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from app.analytics.heatmap import HeatMap
from app.analytics.stream import StreamAnalytics
from app.analytics.zones_file import ZonesConfig, ZonesFileError, load_zones
from app.commands.common import UsageError, eprint
from app.commands.outputs import check_file_output, check_folder_output
from app.inference.result import InferenceResult
from app.sources.files import expand_inputs
from app.sources.video_file import VideoFileReader

DEFAULT_FPS = 30.0  # when a video's container gives no frame rate


def add_arguments(p: argparse.ArgumentParser, path_argument: Callable[[str], str]) -> None:
    p.add_argument(
        "--zones",
        type=path_argument,
        default=None,
        metavar="FILE",
        help="with --track: count line crossings and zone visits per video, from a JSON file of "
        '{"lines": [{"name", "a": [x, y], "b": [x, y]}], "zones": [{"name", "polygon": [[x, y], ...]}]} '
        "in video pixels; event records beside the frames, counts in the summary",
    )
    p.add_argument(
        "--heatmap",
        type=path_argument,
        default=None,
        metavar="PATH",
        help="where objects were, as a PNG over the video's first frame: FILE.png (one video) or "
        "a folder (one VIDEO-NAME.png per video)",
    )
    p.add_argument(
        "--heatmap-window",
        type=_seconds,
        default=None,
        metavar="SECONDS",
        help="the heat map covers the last SECONDS of each video (default: all of it)",
    )


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number of seconds above 0, got {text!r}")
    return value


@dataclass
class _Video:
    path: Path
    fps: float
    analytics: StreamAnalytics
    warned: bool = False  # the zones-outside-the-frame check was made


class InferAnalytics:
    """Zones and heat maps of every video of one `infer` run (fed from one thread at a time:
    infer hands results on in frame order under one lock)."""

    def __init__(
        self,
        zones: ZonesConfig | None,
        zones_origin: str,
        heatmap: str | None,
        window_s: float | None,
        videos: dict[str, Path],
        note: Callable[[str], None] = eprint,
    ) -> None:
        self.zones = zones
        self.zones_origin = zones_origin
        self.heatmap = heatmap
        self.window_s = window_s
        self.videos = videos  # source name (as records name it) -> path
        self._note = note
        self._streams: dict[str, _Video] = {}

    @classmethod
    def from_args(cls, args: argparse.Namespace, source_name: Callable[[Path], str]) -> InferAnalytics | None:
        """None when neither --zones nor --heatmap is given; UsageError for a bad combination
        or file (before any request)."""
        zones_path = getattr(args, "zones", None)
        heatmap = getattr(args, "heatmap", None)
        window = getattr(args, "heatmap_window", None)
        if zones_path is None and heatmap is None:
            if window is not None:
                raise UsageError("--heatmap-window needs --heatmap PATH (where to write the heat maps)")
            return None
        zones = None
        if zones_path is not None:
            if not getattr(args, "track", False):
                raise UsageError(
                    "--zones needs --track: lines and zones count tracked objects (a crossing or a "
                    "visit is one object followed across frames); add --track"
                )
            try:
                zones = load_zones(zones_path)
            except ZonesFileError as e:
                raise UsageError(f"--zones {e}") from None
        items = expand_inputs(args.paths)
        videos = {source_name(item.path): item.path for item in items if item.kind == "video"}
        if heatmap is not None:
            _check_heatmap_target(heatmap, len(videos))
        return cls(zones, str(zones_path), heatmap, window, videos)

    # -- results, in frame order per video --------------------------------------------------------
    def feed(self, result: InferenceResult) -> list[dict[str, Any]]:
        """The event records this frame decided (none for images and pages)."""
        if result.frame is None or result.source is None or result.source not in self.videos:
            return []
        video = self._video(result.source)
        if not video.warned and result.width and result.height:
            video.warned = True
            self._size_known(result.source, video, result.width, result.height)
        detections = result.detections if result.ok else []
        events = video.analytics.update(result.frame, result.frame / video.fps, detections)
        return [e.to_record() for e in events]

    def _video(self, source: str) -> _Video:
        video = self._streams.get(source)
        if video is None:
            path = self.videos[source]
            fps = _frame_rate(path)
            if fps <= 0:
                self._note(f"note: {source}: no frame rate in the video; times assume {DEFAULT_FPS:g} fps")
                fps = DEFAULT_FPS
            analytics = StreamAnalytics(self.zones or ZonesConfig(), frame_period_s=1.0 / fps, source=source)
            video = self._streams[source] = _Video(path, fps, analytics)
        return video

    def _size_known(self, source: str, video: _Video, width: int, height: int) -> None:
        if self.zones is not None:
            for warning in self.zones.outside(width, height):
                self._note(f"warning: --zones {self.zones_origin}: {warning} of {source}")
        if self.heatmap is not None:
            video.analytics.heatmap = HeatMap(width, height, window_s=self.window_s)

    def finish(self) -> list[dict[str, Any]]:
        """Every video ended: the visits still open end (their zone_left records)."""
        return [e.to_record() for video in self._streams.values() for e in video.analytics.finish()]

    # -- the summary and the files ------------------------------------------------------------------
    def summary(self) -> dict[str, Any] | None:
        """The summary's "analytics" (None without --zones)."""
        if self.zones is None:
            return None
        per_source = {source: video.analytics.summary() for source, video in self._streams.items()}
        if not per_source:  # no video frame came: the lines and zones, counted nothing
            return StreamAnalytics(self.zones).summary()
        if len(per_source) == 1:
            return next(iter(per_source.values()))
        return {**_totals(self.zones, per_source.values()), "by_source": per_source}

    def save_heatmaps(self) -> tuple[dict[str, str], list[str]]:
        """Write each video's heat map: ({source: file written}, [errors])."""
        written: dict[str, str] = {}
        errors: list[str] = []
        if self.heatmap is None:
            return written, errors
        names: set[str] = set()
        for source, video in self._streams.items():
            heat = video.analytics.heatmap
            if heat is None:
                errors.append(f"--heatmap: {source}: no frame of it was read: no heat map")
                continue
            target = self._target(video.path, names)
            try:
                heat.save_png(target, _first_frame(video.path))
            except (OSError, ValueError) as e:
                reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
                errors.append(f"--heatmap: cannot write {target}: {reason}")
                continue
            written[source] = target
        return written, errors

    def _target(self, video: Path, taken: set[str]) -> str:
        assert self.heatmap is not None
        if _is_png(self.heatmap):
            return self.heatmap
        stem, n = video.stem, 1
        while (name := f"{stem}.png" if n == 1 else f"{stem}-{n}.png") in taken:
            n += 1
        taken.add(name)
        return os.path.join(self.heatmap, name)


def _is_png(path: str) -> bool:
    return path.lower().endswith(".png")


def _check_heatmap_target(path: str, videos: int) -> None:
    if videos == 0:
        raise UsageError(f"--heatmap {path}: no video among the inputs (a heat map is made of video frames)")
    if _is_png(path):
        if videos > 1:
            raise UsageError(
                f"--heatmap {path}: one file, but the inputs hold {videos} videos: give a folder "
                "for one PNG per video"
            )
        check_file_output("--heatmap", path)
    else:
        check_folder_output("--heatmap", path)


def _frame_rate(path: Path) -> float:
    try:
        with VideoFileReader(path) as reader:
            return reader.fps
    except ValueError:
        return 0.0


def _first_frame(path: Path) -> np.ndarray | None:
    """The video's first frame (RGB), the heat map's background; None when it cannot be read."""
    capture = cv2.VideoCapture(str(path))
    try:
        ok, bgr = capture.read()
    finally:
        capture.release()
    return cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB) if ok and bgr is not None else None


def _totals(zones: ZonesConfig, per_source: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Several videos' lines and zones added up: crossings and entries summed, the highest
    occupancy any one video reached, dwell summed. Track ids are per video, so the totals
    have no dwell per track (each video's are in by_source)."""
    sources = list(per_source)
    lines: dict[str, Any] = {}
    for line in zones.lines:
        counts = [s["lines"][line.name] for s in sources]
        by_class: dict[str, dict[str, int]] = {}
        for c in counts:
            for label, n in c["by_class"].items():
                total = by_class.setdefault(label, {"in": 0, "out": 0})
                total["in"] += n["in"]
                total["out"] += n["out"]
        lines[line.name] = {
            "in": sum(c["in"] for c in counts),
            "out": sum(c["out"] for c in counts),
            "by_class": dict(sorted(by_class.items())),
        }
    zones_out: dict[str, Any] = {}
    for zone in zones.zones:
        counts = [s["zones"][zone.name] for s in sources]
        zones_out[zone.name] = {
            "max_occupancy": max(c["max_occupancy"] for c in counts),
            "entries": sum(c["entries"] for c in counts),
            "total_dwell_s": round(sum(c["total_dwell_s"] for c in counts), 3),
        }
    return {"lines": lines, "zones": zones_out}
