"""A tune's results on disk: JSON, CSV (one row per trial and level), and the recommended
config as `DIR/NAME/config.pbtxt` (a model repository layout Triton loads as it is). Each file
is written whole or not at all (an existing one stays as it was)."""

from __future__ import annotations

import csv
from pathlib import Path

from app.inference.introspection.model_config import to_pbtxt
from app.inference.result import strict_json
from app.pipeline.tune import TuneResult, level_record
from app.system.atomic_files import replacing, write_whole

CSV_COLUMNS = (
    "instances",
    "max_batch_size",
    "max_queue_delay_us",
    "original",
    "concurrency",
    "transport",
    "client_batch",
    "throughput",
    "p50_ms",
    "p95_ms",
    "p99_ms",
    "server_queue_ms",
    "server_compute_ms",
    "avg_batch",
    "executions_per_s",
    "failed",
    "pareto",
    "recommended",
    "error",
)


def write_json(path: str | Path, result: TuneResult) -> None:
    write_whole(path, strict_json(result.to_record(), indent=2) + "\n")


def write_csv(path: str | Path, result: TuneResult) -> None:
    front = {(id(p.level)) for p in result.pareto}
    chosen = id(result.recommendation.level) if result.recommendation is not None else None
    with replacing(path, newline="") as f:
        writer = csv.writer(f)
        writer.writerow(CSV_COLUMNS)
        for trial in result.trials:
            settings = trial.settings.to_record()
            base = {**settings, "original": trial.original}
            if not trial.levels:  # a trial that failed to load: one row with the reason
                row = {**base, "error": trial.error or ""}
                writer.writerow(["" if row.get(c) is None else row.get(c, "") for c in CSV_COLUMNS])
            for level in trial.levels:
                row = {
                    **base,
                    **level_record(level),
                    "pareto": id(level) in front,
                    "recommended": id(level) == chosen,
                    "error": trial.error or level.first_error or "",
                }
                writer.writerow(["" if row.get(c) is None else row.get(c) for c in CSV_COLUMNS])


def recommended_config_text(result: TuneResult) -> str:
    """The recommended config as `config.pbtxt` text, with a comment saying where it comes
    from: the original config with the recommended settings, nothing else changed.
    ValueError when there is no recommendation."""
    config = result.recommended_config()
    if config is None or result.recommendation is None:
        raise ValueError(f"no recommendation to write ({result.recommendation_reason})")
    rec = result.recommendation
    header = (
        f"# Written by triton-viewer tune: {rec.settings.describe()}\n"
        f"# (measured {rec.level.throughput:.1f} req/s, p95 {rec.level.p95_ms or 0:.1f} ms at "
        f"{rec.level.concurrency} in flight); everything else as the original config on {result.url}.\n"
    )
    return header + to_pbtxt(config)


def write_model_config(directory: str | Path, result: TuneResult) -> Path:
    """DIR/NAME/config.pbtxt: the original config with the recommended settings, nothing else
    changed. ValueError when there is no recommendation; OSError when it cannot be written."""
    text = recommended_config_text(result)
    folder = Path(directory) / result.model
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "config.pbtxt"
    write_whole(path, text)
    return path
