"""Reading Triton's statistics of the session's model on its servers (blocking calls: the
session's `read_server_counters`, on whatever thread asks, never a GUI thread)."""

from __future__ import annotations

import dataclasses

from app.inference.core.pool import ConnectionPool
from app.inference.errors import (
    ExtensionMissingError,
    extension_missing,
    restricted_header,
    restricted_message,
)
from app.inference.introspection.discovery import ModelInfo
from app.inference.introspection.extensions import MISSING, Extension, ServerFeatures
from app.inference.introspection.pipeline import pipeline_stages
from app.inference.introspection.server_stats import ServerCounters, add_counters, parse_counters
from app.inference.introspection.stage_stats import stage_counters
from app.inference.transports.channel import Headers


def read_server_counters(
    pool: ConnectionPool,
    info: ModelInfo,
    features: ServerFeatures,
    headers: Headers,
    timeout_s: float,
    version: str = "",
) -> ServerCounters:
    """Triton's cumulative statistics of the model, summed over the servers, with a
    pipeline's stages. ExtensionMissingError ("server statistics not available from this
    server") when the server has no statistics extension (recorded in `features`)."""
    if features.lacks(Extension.STATISTICS):
        raise ExtensionMissingError(features.note_for(Extension.STATISTICS))
    total: ServerCounters | None = None
    # Server by server, also behind a balanced target (each server of a fleet counts its own).
    channels = pool.server_channels()
    for channel in channels:
        try:
            raw = channel.inference_statistics(
                info.name, headers=headers, timeout_s=timeout_s, version=version
            )
        except Exception as e:
            key = restricted_header(e)
            if key is not None:  # a server with restricted protocols: said once, with the fix
                reason = f"no server statistics: {restricted_message(channel.endpoint, key)}"
                features.mark_missing(Extension.STATISTICS, reason)
                raise ExtensionMissingError(reason) from None
            if extension_missing(e):
                features.mark_missing(Extension.STATISTICS)
                raise ExtensionMissingError(MISSING[Extension.STATISTICS]) from None
            raise
        counters = parse_counters(raw, info.name)
        total = counters if total is None else add_counters(total, counters)
    assert total is not None  # a pool has at least one server
    # A pipeline's stages right after: their figures cover (nearly) the same interval.
    stages = stage_counters(channels, pipeline_stages(info.config), headers=headers, timeout_s=timeout_s)
    return dataclasses.replace(total, stages=stages)
