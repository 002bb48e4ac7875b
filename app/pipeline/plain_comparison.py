"""`bench --compare-plain`: at each level of the sweep, the plain tritonclient loop
(app.pipeline.plain_loops) on the same pre-processed tensors, beside the app's figures."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from app.inference.core.session import TritonSession
from app.inference.profiles.profile import preprocess
from app.inference.protocol import Endpoint, ServerProtocol
from app.inference.transports.channel import ConnectionOptions
from app.pipeline.plain_loops import PlainGrpcLoop, PlainHttpLoop
from app.pipeline.sweep import SweepPlan


class PlainComparison:
    """`at_level(session, level)` is the sweep's `extra_for_level`: the plain loop at the same
    level (its warm-up first), against the same server and model as the session. One loop per
    model, made on first use; `close()` closes them."""

    def __init__(
        self,
        endpoint: Endpoint,
        options: ConnectionOptions,
        images: list[np.ndarray],
        plan: SweepPlan,
        timeout_s: float,
    ) -> None:
        self._endpoint, self._options, self._images = endpoint, options, images
        self._plan, self._timeout_s = plan, timeout_s
        self._loops: dict[str, tuple[PlainGrpcLoop | PlainHttpLoop, list[Any]]] = {}

    def at_level(self, session: TritonSession, level: int) -> dict[str, Any]:
        loop, requests = self._loop_for(session)
        warmup, measured = self._plan.warmup_for(level), self._plan.requests
        loop.run(level, itertools.islice(itertools.cycle(requests), warmup), timeout_s=self._timeout_s)
        plain = loop.run(
            level, itertools.islice(itertools.cycle(requests), measured), timeout_s=self._timeout_s
        )
        return {
            "plain_throughput": plain.throughput,
            "plain_p95_ms": plain.p95_ms,
            "plain_failed": plain.failed,
        }

    def close(self) -> None:
        for loop, _ in self._loops.values():
            loop.close()

    def _loop_for(self, session: TritonSession) -> tuple[PlainGrpcLoop | PlainHttpLoop, list[Any]]:
        assert session.info is not None
        name, profile = session.info.name, session.info.profile
        made = self._loops.get(name)
        if made is None:
            loop: PlainGrpcLoop | PlainHttpLoop = (
                PlainHttpLoop(
                    self._endpoint, name, profile.output_names, self._options, binary=session.wire.binary
                )
                if session.protocol is ServerProtocol.HTTP
                else PlainGrpcLoop(self._endpoint, name, profile.output_names, self._options)
            )
            tensors = [preprocess(image, profile)[0] for image in self._images]
            requests = [loop.inputs(t, profile.input_name, profile.input_dtype) for t in tensors]
            made = self._loops[name] = (loop, requests)
        return made
