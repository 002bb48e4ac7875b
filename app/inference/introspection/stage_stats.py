"""The statistics of a pipeline's stages (an ensemble's steps, a BLS model's composing_models),
read with the pipeline's own through the same channel call as any model's, so that whatever
protocol the channel speaks gives them too."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from app.inference.introspection.pipeline import Pipeline
from app.inference.introspection.server_stats import ServerCounters, add_counters, parse_counters
from app.inference.transports.channel import Headers

StageCounters = tuple[tuple[str, ServerCounters], ...]


class StatisticsSource(Protocol):
    """The one call of a Channel that this needs."""

    def inference_statistics(
        self, model: str, *, headers: Headers, timeout_s: float, version: str = ""
    ) -> dict[str, Any]: ...


def stage_counters(
    channels: Iterable[StatisticsSource], pipeline: Pipeline | None, *, headers: Headers, timeout_s: float
) -> StageCounters:
    """Each stage's cumulative counters, summed over the servers (one channel each), in the
    pipeline's order; () for a single model. Blocking: one statistics call per stage and server."""
    if pipeline is None:
        return ()
    versions: dict[str, str] = {}
    for stage in pipeline.stages:  # a model used by two steps is read once
        versions.setdefault(stage.model, stage.version or "")
    totals: dict[str, ServerCounters] = {}
    for channel in channels:
        for name, version in versions.items():
            try:
                raw = channel.inference_statistics(
                    name, headers=headers, timeout_s=timeout_s, version=version
                )
            except Exception:
                continue  # a stage not loaded there: the others are still shown
            counters = parse_counters(raw, name)
            totals[name] = add_counters(totals[name], counters) if name in totals else counters
    return tuple((name, totals[name]) for name in versions if name in totals)
