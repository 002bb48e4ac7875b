"""`python -m app models [--url URL]`: what a server serves, and how the app would read it."""

from __future__ import annotations

import argparse
from typing import Any

from tritonclient.utils import InferenceServerException

from app.commands.common import (
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    add_connection_arguments,
    add_model_arguments,
    eprint,
    serving,
    session_spec,
)
from app.inference.errors import SessionError, classify_failure, first_paragraph
from app.inference.introspection.discovery import (
    check_live,
    model_config_if_any,
    model_ready,
    models_if_listed,
    server_features,
)
from app.inference.introspection.extensions import ServerFeatures
from app.inference.introspection.pipeline import pipeline_stages
from app.inference.profile_kinds import BoxesIn, Task
from app.inference.profiles.profile import ModelProfile, ProfileError, detect_profile
from app.inference.profiles.task_summary import task_summary
from app.inference.protocol import Endpoint
from app.inference.result import ErrorKind
from app.inference.transports.channel import Channel, ConnectionOptions
from app.inference.transports.open_channel import open_channel
from app.model_states import ModelEntry, ModelState


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_connection_arguments(p, repeatable_url=False)
    add_model_arguments(p)
    p.epilog = "--model shows that model only; --profile/--labels show the profile they would give."


def run(args: argparse.Namespace) -> int:
    try:
        spec = session_spec(args)
        with serving(spec) as spec:
            overrides = spec.profile.load()
            report = describe_server(
                spec.endpoints[0], spec.connection, spec.timeouts.request_s, spec.model, overrides
            )
            print(report, end="", flush=True)
        return EXIT_OK
    except (UsageError, SessionError) as e:
        eprint(f"error: {e}")
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130


def describe_server(
    endpoint: Endpoint,
    options: ConnectionOptions,
    timeout_s: float,
    only: str | None = None,
    overrides: dict[str, Any] | None = None,
) -> str:
    """The human-readable report; SessionError when the server cannot be asked."""
    headers = dict(options.headers)
    url = endpoint.url
    channel = open_channel(endpoint, options)
    try:
        check_live(channel, headers, min(timeout_s, 5.0))
        features = server_features(channel, headers, timeout_s)
        listed = models_if_listed(channel, headers, timeout_s, features)
        if listed is None:  # no repository index: only the model named, if ModelReady says so
            if only is None:
                raise SessionError(
                    f"the server at {url} gives no model list (Triton's repository extension): "
                    "name the model (--model NAME)",
                    ErrorKind.NOT_FOUND,
                )
            ready = model_ready(channel, only, "", headers, timeout_s)
            listed = [ModelEntry(only, "", ModelState.READY if ready else ModelState.NOT_READY)]
        entries = listed
        states = _states(entries)
        if only is not None:
            names = sorted({m.name for m in entries})
            entries = [m for m in entries if m.name == only]
            if not entries:
                raise SessionError(
                    f"model '{only}' not found on {url}; models there: {', '.join(names) or '(none)'}",
                    ErrorKind.NOT_FOUND,
                    names,
                )
        server = features.describe() or "server"
        lines = [f"{server} at {url} over {channel.protocol.label}: {len(entries)} model(s)", ""]
        for entry in sorted(entries, key=lambda m: (m.name, m.version)):
            lines += _describe_model(channel, headers, timeout_s, entry, overrides, states, features)
            lines.append("")
        lines += [f"note: {note}" for note in features.notes()]
        return "\n".join(lines) + ("\n" if features.notes() else "")
    finally:
        channel.close()


def _describe_model(
    channel: Channel,
    headers: dict[str, str | bytes],
    timeout_s: float,
    entry: ModelEntry,
    overrides: dict[str, Any] | None,
    states: dict[str, str],
    features: ServerFeatures,
) -> list[str]:
    version = f" (version {entry.version})" if entry.version else ""
    lines = [f"{entry.name}{version}: {entry.state_text}"]
    if not entry.ready:
        if entry.reason:
            lines.append(f"  reason: {first_paragraph(entry.reason)}")
        return lines
    try:
        metadata = channel.model_metadata(entry.name, headers=headers, timeout_s=timeout_s)
        known = model_config_if_any(channel, entry.name, headers, timeout_s, features=features)
    except InferenceServerException as e:
        failure = classify_failure(e, channel.endpoint, headers.values())
        lines.append(f"  cannot read its metadata/config: {failure.message}")
        return lines
    except SessionError as e:
        lines.append(f"  cannot read its config: {e}")
        return lines
    config = known or {}
    backend = config.get("backend") or config.get("platform") or metadata.get("platform", "")
    if backend:
        lines.append(f"  backend: {backend}")
    for kind in ("inputs", "outputs"):
        lines.append(f"  {kind}:")
        for t in metadata.get(kind, []):
            shape = ", ".join(str(d) for d in t.get("shape", []))
            lines.append(f"    {t.get('name')}  {t.get('datatype')}  [{shape}]")
    if known is not None:
        lines.append(f"  max_batch_size: {int(config.get('max_batch_size', 0) or 0)}")
        lines.append(f"  dynamic batching: {_dynamic_batching(config.get('dynamic_batching'))}")
        lines.append(f"  instance groups: {_instance_groups(config.get('instance_group') or [])}")
    else:
        lines.append("  config: not available from this server (profile from the metadata alone)")
    lines += _describe_stages(config, states)
    try:
        profile = detect_profile(metadata, config, overrides)
    except ProfileError as e:
        lines.append(f"  profile: not detected: {e} (describe it with --profile FILE)")
    else:
        lines += ["  profile:", *(f"    {line}" for line in describe_profile(profile))]
    return lines


def _states(entries: list[ModelEntry]) -> dict[str, str]:
    """Each model's state on the server: READY when any version is."""
    out: dict[str, str] = {}
    for m in entries:
        if out.get(m.name) != ModelState.READY:
            out[m.name] = m.state_text
    return out


def _describe_stages(config: dict[str, Any], states: dict[str, str]) -> list[str]:
    """The stages of an ensemble or a BLS model that names them, with their state here."""
    pipeline = pipeline_stages(config)
    if pipeline is None:
        return []
    kind = "ensemble" if pipeline.kind == "ensemble" else "BLS, its composing_models"
    count = len(pipeline.stages)
    lines = [f"  pipeline ({kind}): {count} stage{'s' * (count != 1)}"]
    for i, stage in enumerate(pipeline.stages, 1):
        version = f" version {stage.version}" if stage.version else ""
        lines.append(f"    {i}. {stage.model}{version}: {states.get(stage.model, 'not on this server')}")
    return lines


def _dynamic_batching(value: Any) -> str:
    if value is None:
        return "off"
    if not value:
        return "on"
    parts = []
    delay = value.get("max_queue_delay_microseconds")
    if delay is not None:
        parts.append(f"max queue delay {delay} us")
    preferred = value.get("preferred_batch_size")
    if preferred:
        parts.append(f"preferred batch sizes {', '.join(str(v) for v in preferred)}")
    return "on" + (f" ({'; '.join(parts)})" if parts else "")


def _instance_groups(groups: list[dict[str, Any]]) -> str:
    if not groups:
        return "server default"
    out = []
    for g in groups:
        count = g.get("count", 1)
        kind = str(g.get("kind", "KIND_AUTO")).removeprefix("KIND_")
        gpus = g.get("gpus")
        out.append(f"{count} x {kind}" + (f" on GPUs {', '.join(str(x) for x in gpus)}" if gpus else ""))
    return ", ".join(out)


_BOXES_IN = {
    BoxesIn.INPUT: "model-input pixels",
    BoxesIn.ORIGINAL: "original-image pixels",
    BoxesIn.NORMALIZED: "normalised 0..1 coordinates",
}


SIZE_SENT = "sent the model-input width, height"


def describe_profile(profile: ModelProfile) -> list[str]:
    size = "any (image as it is)" if profile.input_size is None else "x".join(map(str, profile.input_size))
    if profile.input_size is not None and profile.input_size_source:
        size += f" (from {profile.input_size_source})"
    norm = ""
    if profile.input_dtype != "UINT8":
        norm = f", scale {profile.scale:g}"
        if profile.mean is not None or profile.std is not None:
            norm += f", mean {profile.mean}, std {profile.std}"
    labels = ", ".join(profile.labels[:10]) + (" ..." if len(profile.labels) > 10 else "")
    boxes = ""
    if profile.task not in (Task.SEMANTIC, Task.CLASSIFY):
        boxes = f", boxes in {_BOXES_IN[profile.boxes_in]}"
    return [
        f"input: {profile.input_name} {profile.input_dtype} {profile.input_layout} {profile.channel_order}, "
        f"size {size}, {'with' if profile.has_batch_dim else 'no'} batch dim, "
        f"preprocess {profile.preprocess}{norm}",
        *(
            [f"size input: {profile.size_input} {profile.size_input_dtype}, {SIZE_SENT}"]
            if profile.size_input
            else []
        ),
        f"output: {profile.output_format} ({', '.join(profile.output_names)}){boxes}",
        *([f"layout: {profile.layout_reason}"] if profile.layout_reason else []),
        task_summary(profile),
        f"thresholds: score {profile.score_threshold:g}, iou {profile.iou_threshold:g}, "
        f"max {profile.max_detections} detections",
        f"labels: {labels or '(class N; COCO names for 80-class raw YOLO outputs)'}",
    ]
