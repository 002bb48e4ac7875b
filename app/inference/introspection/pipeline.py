"""The stages of a pipeline model, from its config: an ensemble's `ensemble_scheduling` steps,
or the models a BLS (Python-backend) model declares it calls in the config parameter
`composing_models` (names separated by commas or newlines, in the order it calls them)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from app.inference.decoding.labels import parse_labels_text


@dataclass(frozen=True)
class Stage:
    """One composing model; `version` None: the server's choice (the latest)."""

    model: str
    version: str | None = None


@dataclass(frozen=True)
class Pipeline:
    kind: str  # "ensemble" | "bls"
    stages: tuple[Stage, ...]

    def names(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(s.model for s in self.stages))


def pipeline_stages(config: Mapping[str, Any]) -> Pipeline | None:
    """The pipeline a model config describes (as tritonclient returns it with as_json=True,
    wrapped in {"config": ...} or not), None for a single model."""
    cfg = config.get("config", config)
    steps = (cfg.get("ensemble_scheduling") or {}).get("step") or []
    if steps:
        stages = []
        for step in steps:
            version = str(step.get("model_version", "-1"))
            stages.append(Stage(str(step.get("model_name", "?")), None if version in ("-1", "") else version))
        return Pipeline("ensemble", tuple(stages))
    entry = (cfg.get("parameters") or {}).get("composing_models")
    text = entry.get("string_value") if isinstance(entry, dict) else entry
    names = parse_labels_text(str(text)) if text else ()
    return Pipeline("bls", tuple(Stage(n) for n in names)) if names else None


def stage_owners(
    names: Iterable[str], read_config: Callable[[str], Mapping[str, Any] | None]
) -> dict[str, str]:
    """{stage model: the pipeline that composes it} over the models `names`, reading each
    one's config with `read_config(name)` (None: not known). A stage of several pipelines is
    given to the first, by name."""
    owners: dict[str, str] = {}
    for name in sorted(names):
        config = read_config(name)
        pipeline = pipeline_stages(config) if config else None
        for stage in pipeline.names() if pipeline is not None else ():
            if stage != name:
                owners.setdefault(stage, name)
    return owners
