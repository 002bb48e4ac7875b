"""The baselines the app's speed is measured against: what a plain tritonclient client does,
with nothing of the app's pipeline (no session, no window, no decoding).

`PlainGrpcLoop`: one tritonclient gRPC client, `async_infer`, at most `level` requests in
flight (a semaphore). `PlainHttpLoop`: the same over HTTP with tritonclient's asyncio client
(binary tensors where the server has Triton's binary tensor extension). Both send the
inputs they are given in turn and measure `LoadFigures`. Used by `bench --compare-plain`
(app.pipeline.plain_comparison) and by the benchmark scripts in tests/bench.

Light on purpose (tritonclient, numpy and the figures): a plain script timed as a whole
process imports it without the session.
"""

from __future__ import annotations

import base64
import functools
import ssl
import threading
import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import tritonclient.grpc as grpcclient

from app.pipeline.load_figures import LoadFigures, figures_of

if TYPE_CHECKING:
    from app.inference.protocol import Endpoint
    from app.inference.transports.channel import ConnectionOptions


class PlainGrpcLoop:
    """`output_names`: the outputs asked for and read from every reply, as any client does
    with a reply (none: the server sends them all and nothing is read)."""

    def __init__(
        self,
        endpoint: Endpoint,
        model: str,
        output_names: Sequence[str] = (),
        options: ConnectionOptions | None = None,
    ) -> None:
        self.client = grpcclient.InferenceServerClient(
            endpoint.address,
            ssl=bool(options and options.ssl),
            root_certificates=options.root_certificates if options else None,
        )
        self.model = model
        self.headers = dict(options.headers) if options and options.headers else None
        self.output_names = list(output_names)
        self.outputs = [grpcclient.InferRequestedOutput(n) for n in self.output_names] or None

    @staticmethod
    def inputs(tensor: np.ndarray, name: str, datatype: str) -> list[grpcclient.InferInput]:
        """One request's inputs: `tensor` (batch axis included) as input `name`."""
        inp = grpcclient.InferInput(name, list(tensor.shape), datatype)
        inp.set_data_from_numpy(tensor)
        return [inp]

    def close(self) -> None:
        self.client.close()

    def run(
        self,
        level: int,
        requests: Iterable[list[grpcclient.InferInput]],
        *,
        timeout_s: float | None = None,
        seconds: float | None = None,
    ) -> LoadFigures:
        """Send each of `requests` (its inputs), at most `level` in flight; with `seconds`,
        stop sending once that long has passed. Returns when every reply has arrived."""
        slots = threading.Semaphore(level)
        latencies: list[float] = []
        errors: list[str] = []

        def done(started: float, result: Any, error: Any) -> None:
            try:
                if error is None:
                    for name in self.output_names:  # what any client does with a reply
                        result.as_numpy(name)
                    latencies.append((time.perf_counter() - started) * 1000)
                else:
                    errors.append(str(error))
            finally:
                slots.release()

        sent = 0
        t0 = time.perf_counter()
        for inputs in requests:
            if seconds is not None and time.perf_counter() - t0 >= seconds:
                break
            slots.acquire()
            sent += 1
            started = time.perf_counter()
            try:
                self.client.async_infer(
                    self.model,
                    inputs,
                    functools.partial(done, started),
                    outputs=self.outputs,
                    client_timeout=timeout_s,
                    headers=self.headers,
                )
            except Exception as e:
                slots.release()
                errors.append(str(e))
        for _ in range(level):  # every slot back: every reply arrived
            slots.acquire()
        elapsed = time.perf_counter() - t0
        return figures_of(latencies, sent, len(errors), elapsed, errors[0] if errors else None)


class PlainHttpLoop:
    """`binary`: tensors as binary data (Triton's extension) instead of JSON. Each run has its
    own client, on its own event loop."""

    def __init__(
        self,
        endpoint: Endpoint,
        model: str,
        output_names: Sequence[str] = (),
        options: ConnectionOptions | None = None,
        *,
        binary: bool = True,
    ) -> None:
        import tritonclient.http as httpclient  # on first use: it brings gevent

        self._http = httpclient
        self.address = endpoint.address
        self.tls = endpoint.tls or bool(options and options.ssl)
        self.root_certificates = options.root_certificates if options else None
        self.model = model
        self.binary = binary
        self.headers = {
            k: base64.b64encode(v).decode("ascii") if isinstance(v, bytes) else v
            for k, v in (options.headers if options else {}).items()
        }
        self.headers["Content-Type"] = "application/json"
        self.output_names = list(output_names)
        self.outputs = [
            httpclient.InferRequestedOutput(n, binary_data=binary) for n in self.output_names
        ] or None

    def inputs(self, tensor: np.ndarray, name: str, datatype: str) -> list[Any]:
        """One request's inputs: `tensor` (batch axis included) as input `name`."""
        inp = self._http.InferInput(name, list(tensor.shape), datatype)
        inp.set_data_from_numpy(tensor, binary_data=self.binary)
        return [inp]

    def close(self) -> None:
        pass  # each run has its own client, on its own event loop

    def run(
        self, level: int, requests: Iterable[list[Any]], *, timeout_s: float | None = None
    ) -> LoadFigures:
        """Send each of `requests` (its inputs), at most `level` in flight."""
        import asyncio  # here: the gRPC loop's scripts never pay for it

        return asyncio.run(self._run(level, list(requests), timeout_s))

    async def _run(self, level: int, requests: list[list[Any]], timeout_s: float | None) -> LoadFigures:
        import asyncio

        import tritonclient.http.aio as httpaio

        context = ssl.create_default_context(cafile=self.root_certificates) if self.tls else False
        client = httpaio.InferenceServerClient(
            self.address, conn_limit=level, conn_timeout=timeout_s, ssl=self.tls, ssl_context=context
        )
        slots = asyncio.Semaphore(level)
        latencies: list[float] = []
        errors: list[str] = []

        async def one(inputs: list[Any]) -> None:
            async with slots:
                started = time.perf_counter()
                try:
                    result = await client.infer(
                        self.model, inputs, outputs=self.outputs, headers=dict(self.headers)
                    )
                    for name in self.output_names:  # what any client does with a reply
                        result.as_numpy(name)
                    latencies.append((time.perf_counter() - started) * 1000)
                except Exception as e:
                    errors.append(str(e) or type(e).__name__)

        t0 = time.perf_counter()
        try:
            await asyncio.gather(*(one(inputs) for inputs in requests))
        finally:
            await client.close()
        elapsed = time.perf_counter() - t0
        return figures_of(latencies, len(requests), len(errors), elapsed, errors[0] if errors else None)
