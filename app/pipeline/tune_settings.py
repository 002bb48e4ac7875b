"""The server settings a tune tries: instance count, max batch size, dynamic batching (off or
its max queue delay). Read from a model's config, applied to a copy of it (everything else
unchanged), the default lists to try, and the mark every trial config carries.
"""

from __future__ import annotations

import copy
import itertools
import os
import re
import socket
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from app.inference.introspection.model_config import ModelConfigDict, normalise
from app.system.leftovers import owner_alive, start_time, sweep_enabled

# A config parameter set on every trial config: a later tune (or `repository config`) can
# tell that a model was left on a trial config by a tune that could not restore it (killed).
TRIAL_MARK = "triton_viewer_tune_trial"
DEFAULT_DELAY_US = 2000
MAX_INSTANCES = 64
MAX_BATCH = 4096


@dataclass(frozen=True)
class TrialSettings:
    instances: int
    max_batch_size: int
    max_queue_delay_us: int | None  # None: no dynamic batching

    def to_record(self) -> dict[str, int | None]:
        return {
            "instances": self.instances,
            "max_batch_size": self.max_batch_size,
            "max_queue_delay_us": self.max_queue_delay_us,
        }

    def describe(self) -> str:
        """e.g. "2 instances, max batch 8, dynamic batching (2000 us)"."""
        plural = "s" if self.instances != 1 else ""
        batching = (
            "no dynamic batching"
            if self.max_queue_delay_us is None
            else f"dynamic batching ({self.max_queue_delay_us} us)"
        )
        return f"{self.instances} instance{plural}, max batch {self.max_batch_size}, {batching}"


def _int(value: Any, default: int = 0) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def settings_of(config: Mapping[str, Any]) -> TrialSettings:
    groups = config.get("instance_group") or []
    instances = sum(_int(g.get("count", 1), 1) for g in groups) if groups else 1
    batching = config.get("dynamic_batching")
    delay = None if batching is None else _int(batching.get("max_queue_delay_microseconds", 0))
    return TrialSettings(instances, _int(config.get("max_batch_size", 0)), delay)


def trial_mark_of(config: Mapping[str, Any]) -> str | None:
    """The mark of a trial config (who set it, when), None for any other config."""
    value = (config.get("parameters") or {}).get(TRIAL_MARK)
    if value is None:
        return None
    return str(value.get("string_value", "")) or "(unnamed)"


def new_trial_mark() -> str:
    """Who sets the trial config: this process (pid and start time: a reused pid is another
    process) on this machine, when, and which of its tunes (two in one process differ)."""
    pid = os.getpid()
    when = time.strftime("%Y-%m-%d %H:%M:%S")
    return (
        f"pid {pid}, start {start_time(pid) or 0}, host {socket.gethostname()}, {when}, tune {next(_tunes)}"
    )


_tunes = itertools.count(1)
_MARK_OWNER = re.compile(r"pid (\d+), start (\d+), host ([^,]*),")


@dataclass(frozen=True)
class MarkOwner:
    pid: int
    start: int
    host: str

    @property
    def here(self) -> bool:
        """On this machine, where its process can be looked up (/proc readable)."""
        return self.host == socket.gethostname() and sweep_enabled()

    @property
    def alive(self) -> bool:
        """Its process still runs (the same pid with the same start time); only when `here`."""
        return self.here and owner_alive(self.pid, self.start)


def mark_owner(mark: str) -> MarkOwner | None:
    """The tune a mark names; None for a mark of an older version (pid and time only)."""
    match = _MARK_OWNER.match(mark)
    return None if match is None else MarkOwner(int(match[1]), int(match[2]), match[3])


def apply_settings(
    config: Mapping[str, Any], settings: TrialSettings, mark: str | None = None
) -> ModelConfigDict:
    """A copy of `config` with these settings and nothing else changed (plus the trial mark
    when given). ValueError when the config cannot take them."""
    out = copy.deepcopy(dict(config))
    groups = out.get("instance_group") or []
    if len(groups) > 1:
        if settings.instances != settings_of(config).instances:
            raise ValueError(
                f"the model has {len(groups)} instance groups: a tune changes the count of one group only"
            )
    elif groups:
        groups[0]["count"] = settings.instances
    else:
        out["instance_group"] = [{"count": settings.instances}]
    original_batch = _int(config.get("max_batch_size", 0))
    if (original_batch == 0) != (settings.max_batch_size == 0):
        raise ValueError(
            "max_batch_size 0 means the model's inputs have no batch dimension: a tune cannot "
            f"change it from {original_batch} to {settings.max_batch_size}"
        )
    out["max_batch_size"] = settings.max_batch_size
    if settings.max_queue_delay_us is None:
        out.pop("dynamic_batching", None)
    else:
        if settings.max_batch_size == 0:
            raise ValueError("dynamic batching needs max_batch_size > 0")
        batching = dict(out.get("dynamic_batching") or {})
        batching["max_queue_delay_microseconds"] = str(settings.max_queue_delay_us)
        largest = settings.max_batch_size
        preferred = [p for p in batching.get("preferred_batch_size", []) if _int(p) <= largest]
        if preferred:
            batching["preferred_batch_size"] = preferred
        else:
            batching.pop("preferred_batch_size", None)
        out["dynamic_batching"] = batching
    parameters = dict(out.get("parameters") or {})
    parameters.pop(TRIAL_MARK, None)
    if mark is not None:
        parameters[TRIAL_MARK] = {"string_value": mark}
    if parameters:
        out["parameters"] = parameters
    else:
        out.pop("parameters", None)
    return normalise(out, "the trial config")


def without_mark(config: Mapping[str, Any]) -> ModelConfigDict:
    """The config with no trial mark (what a written config.pbtxt must be)."""
    return apply_settings(config, settings_of(config))


# -- the lists to try -------------------------------------------------------
def default_instances(current: TrialSettings) -> list[int]:
    return sorted({current.instances, min(MAX_INSTANCES, current.instances * 2)})


def default_max_batches(current: TrialSettings) -> list[int]:
    return [current.max_batch_size]


def default_queue_delays(current: TrialSettings) -> list[int | None]:
    if current.max_batch_size == 0:
        return [None]
    delay = current.max_queue_delay_us
    third = delay if delay not in (None, 0) else DEFAULT_DELAY_US
    return list(dict.fromkeys([None, 0, third]))


def parse_int_list(text: str, option: str, low: int, high: int) -> list[int]:
    """ "1,2,4" -> [1, 2, 4] (order kept, duplicates dropped); ValueError naming the option."""
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise ValueError(
            f"{option} expects comma-separated whole numbers, e.g. 1,2,4; got {text!r}"
        ) from None
    if not values:
        raise ValueError(f"{option} needs at least one value")
    bad = [v for v in values if not low <= v <= high]
    if bad:
        raise ValueError(f"{option}: {bad[0]} is out of range ({low} to {high})")
    return list(dict.fromkeys(values))


def parse_delay_list(text: str, option: str = "--queue-delay-us") -> list[int | None]:
    """ "off,0,2000" -> [None, 0, 2000]: `off` means no dynamic batching; ValueError naming
    the option (a command-line option, or a field of the viewer's Tune window)."""
    values: list[int | None] = []
    for part in (p.strip().lower() for p in text.split(",")):
        if not part:
            continue
        if part in ("off", "none", "no"):
            values.append(None)
            continue
        try:
            value = int(part)
        except ValueError:
            raise ValueError(
                f"{option} expects microseconds or 'off' (no dynamic batching), e.g. off,0,2000; got {part!r}"
            ) from None
        if not 0 <= value <= 10_000_000:
            raise ValueError(f"{option}: {value} is out of range (0 to 10000000 us)")
        values.append(value)
    if not values:
        raise ValueError(f"{option} needs at least one value")
    return list(dict.fromkeys(values))


def trial_settings(
    current: TrialSettings,
    instances: Sequence[int] | None = None,
    max_batches: Sequence[int] | None = None,
    queue_delays: Sequence[int | None] | None = None,
) -> list[TrialSettings]:
    """Every combination asked for (defaults from the current settings), the current settings
    first: they are measured as they are (no load), the baseline of the speedup. ValueError
    when a list cannot apply to this model."""
    instances = list(instances or default_instances(current))
    max_batches = list(max_batches or default_max_batches(current))
    queue_delays = list(queue_delays or default_queue_delays(current))
    if current.max_batch_size == 0:
        if any(b != 0 for b in max_batches):
            raise ValueError(
                "the model has max_batch_size 0 (no batch dimension): --max-batch cannot change that"
            )
        if any(d is not None for d in queue_delays):
            raise ValueError("the model has max_batch_size 0: dynamic batching cannot apply (use off)")
    elif any(b == 0 for b in max_batches):
        raise ValueError("--max-batch 0 would remove the model's batch dimension: use values >= 1")
    combos = [TrialSettings(i, b, d) for i, b, d in itertools.product(instances, max_batches, queue_delays)]
    return [current, *(s for s in combos if s != current)]
