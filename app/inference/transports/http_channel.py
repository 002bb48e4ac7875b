"""`HttpChannel`: one connection to a server over HTTP/REST (the KServe v2 protocol), behind
the same `Channel` seam as `GrpcChannel`, so the session, the pool, retries and discovery
work unchanged.

Why a thread with its own event loop: tritonclient's asynchronous HTTP client
(`tritonclient.http.aio`, over aiohttp) is single-threaded and bound to the loop it was made
on, while the session is written against thread-safe calls and reply callbacks (gRPC's
model). Each channel runs one loop on one daemon thread, like gRPC's own channel thread:
`send` schedules the request there and returns at once; the reply callback runs there and
only hands off; the blocking calls (health, metadata...) wait for their coroutine.

Every failure is raised as an `InferenceServerException` (HTTP statuses as the server sent
them; the channel's own failures as `HttpChannelError` with a gRPC-style code and flags), so
`classify_failure` reads both protocols alike. An HTTP request cannot be cancelled on the
server: `cancel()` drops it on the client (the connection is closed) and the server may
still run it.
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import contextlib
import errno
import io
import json
import ssl
import threading
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import Any, TypeVar

import aiohttp
import tritonclient.http.aio as aioclient
from tritonclient.utils import InferenceServerException

from app.inference.errors import REPLY_OVERHEAD_BYTES
from app.inference.protocol import Endpoint, ServerProtocol
from app.inference.transports.channel import (
    Call,
    ConnectionOptions,
    Headers,
    ReplyCallback,
    TraceSettingsJson,
    trace_settings_json,
)

T = TypeVar("T")
CLOSE_TIMEOUT_S = 5.0
LARGE_BODY_BYTES = 1 << 20  # aiohttp's own threshold for "large"
# Beyond the call's own deadline: how long a blocking call waits for the loop to answer.
LOOP_GRACE_S = 5.0


class HttpChannelError(InferenceServerException):
    """A failure of the HTTP channel itself (no HTTP status): `status()` is a gRPC code name
    (UNAVAILABLE, DEADLINE_EXCEEDED, CANCELLED); `closed_by_peer`: the server accepted the
    connection and then closed or reset it (mid-response included); `tls`: the TLS handshake
    or the certificate failed."""

    def __init__(self, msg: str, status: str, *, closed_by_peer: bool = False, tls: bool = False) -> None:
        super().__init__(msg=msg, status=status)
        self.closed_by_peer = closed_by_peer
        self.tls = tls


def channel_error(error: BaseException) -> InferenceServerException:
    """`error` (aiohttp's, asyncio's or tritonclient's) as an InferenceServerException."""
    if isinstance(error, InferenceServerException):
        return error
    if isinstance(error, asyncio.CancelledError | concurrent.futures.CancelledError):
        return HttpChannelError("Locally cancelled by application!", "CANCELLED")
    if isinstance(error, TimeoutError | concurrent.futures.TimeoutError):
        return HttpChannelError("Deadline Exceeded", "DEADLINE_EXCEEDED")
    if isinstance(error, aiohttp.ClientSSLError | ssl.SSLError):
        return HttpChannelError(f"TLS handshake failed: {error}", "UNAVAILABLE", tls=True)
    if isinstance(error, aiohttp.ClientConnectorError):
        refused = error.os_error is not None and error.os_error.errno == errno.ECONNREFUSED
        what = "connection refused" if refused else f"cannot connect: {error.os_error or error}"
        return HttpChannelError(what, "UNAVAILABLE")
    if isinstance(error, aiohttp.ServerDisconnectedError):
        return HttpChannelError("the server closed the connection", "UNAVAILABLE", closed_by_peer=True)
    if isinstance(error, aiohttp.ClientPayloadError):
        return HttpChannelError(
            f"the reply was cut short (connection reset mid-response: {error})",
            "UNAVAILABLE",
            closed_by_peer=True,
        )
    if isinstance(error, aiohttp.ClientResponseError):
        # Not an HTTP reply at all (e.g. a gRPC or TLS port): the peer then closes.
        return HttpChannelError(
            f"the reply is not HTTP ({error.message})", "UNAVAILABLE", closed_by_peer=True
        )
    if isinstance(error, aiohttp.ClientOSError | ConnectionError):
        return HttpChannelError(f"connection reset ({error})", "UNAVAILABLE", closed_by_peer=True)
    if isinstance(error, aiohttp.ClientError | OSError):
        return HttpChannelError(f"{type(error).__name__}: {error}", "UNAVAILABLE")
    return HttpChannelError(f"{type(error).__name__}: {error}", "INTERNAL")


# Every request: replies uncompressed (tritonclient's asyncio client reads error and metadata
# bodies as they come, and MLServer gzips them for clients that accept it, as aiohttp does).
BASE_HEADERS = {"Accept-Encoding": "identity"}
# Requests with a body: JSON (FastAPI servers such as MLServer refuse a body of another type;
# Triton reads a binary request by its Inference-Header-Content-Length header whatever the type).
JSON_BODY = {"Content-Type": "application/json"}


def http_headers(headers: Headers | None, extra: dict[str, str] | None = None) -> dict[str, str]:
    """HTTP headers are text: a binary (`-bin`) value travels base64-encoded, as gRPC-web does."""
    text = {
        k: base64.b64encode(v).decode("ascii") if isinstance(v, bytes) else v
        for k, v in (headers or {}).items()
    }
    return {**BASE_HEADERS, **(extra or {}), **text}


def ssl_context(options: ConnectionOptions) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=options.root_certificates)
    if options.certificate_chain:
        context.load_cert_chain(options.certificate_chain, options.private_key)
    return context


def reply_too_large(size: int, limit: int) -> HttpChannelError:
    """gRPC's words for a reply over the receive limit, so `classify_failure` reads both
    protocols alike (too_large, naming the size and the limit)."""
    return HttpChannelError(
        f"CLIENT: Received message larger than max ({size} vs. {limit})", "RESOURCE_EXHAUSTED"
    )


async def read_bounded(response: Any, limit: int) -> bytes:
    """The reply's body, refused past `limit` bytes from its headers before any of it is read
    (Content-Length; Triton's Inference-Header-Content-Length, the JSON part of a binary
    reply), and while it is read when no length is announced (chunked)."""
    for name in ("Content-Length", "Inference-Header-Content-Length"):
        try:
            announced = int(response.headers.get(name) or 0)
        except ValueError:
            announced = 0  # not a number: aiohttp itself refuses a bad Content-Length
        if announced > limit:
            response.close()  # the connection is dropped: its body is never read
            raise reply_too_large(announced, limit)
    if response.headers.get("Content-Length") is None:
        body = bytearray()
        async for chunk in response.content.iter_chunked(LARGE_BODY_BYTES):
            body += chunk
            if len(body) > limit:
                response.close()
                raise reply_too_large(len(body), limit)
        # aiohttp's read() hands back `_body` once set: tritonclient reads the body again.
        response._body = bytes(body)
    return bytes(await response.read())


class _KServeClient(aioclient.InferenceServerClient):
    """tritonclient's asyncio HTTP client, with a repository-index request that carries a JSON
    body (Triton accepts an empty one, MLServer (FastAPI) answers 422 to it), large bodies
    sent from a BytesIO (aiohttp writes those in chunks, letting the loop serve the channel's
    other requests in between; raw bytes are written whole, and aiohttp warns about it), and
    every reply bounded by `reply_limit` (read_bounded) before tritonclient reads it."""

    reply_limit = 1 << 62  # set by HttpChannel from ConnectionOptions.max_output_bytes

    async def _post(self, request_uri: str, request_body: Any, headers: Any, query_params: Any) -> Any:
        if isinstance(request_body, str):
            request_body = request_body.encode("utf-8")
        if isinstance(request_body, bytes) and len(request_body) > LARGE_BODY_BYTES:
            request_body = io.BytesIO(request_body)
        response = await super()._post(request_uri, request_body, headers, query_params)
        await read_bounded(response, self.reply_limit)  # see _get
        return response

    async def _get(self, request_uri: str, headers: Any, query_params: Any) -> Any:
        response = await super()._get(request_uri, headers, query_params)
        # Read whole now (kept by the response): the readiness calls look at the status only,
        # and a body left unread keeps its connection out of the pool until garbage collection.
        await read_bounded(response, self.reply_limit)
        return response

    async def get_model_repository_index(self, headers: Any = None, query_params: Any = None) -> Any:
        response = await self._post(
            request_uri="v2/repository/index", request_body="{}", headers=headers, query_params=query_params
        )
        await aioclient._raise_if_error(response)
        return json.loads(await response.read())


class _HttpCall:
    """One request in flight: ends exactly once (reply, error, or cancel)."""

    def __init__(self, on_done: ReplyCallback) -> None:
        self._on_done = on_done
        self._lock = threading.Lock()
        self._ended = False
        self._future: concurrent.futures.Future[None] | None = None

    def finish(self, result: Any = None, error: BaseException | None = None) -> None:
        with self._lock:
            if self._ended:
                return
            self._ended = True
        self._on_done(result=result, error=error)

    def attach(self, future: concurrent.futures.Future[None]) -> None:
        self._future = future
        future.add_done_callback(self._future_done)

    def _future_done(self, future: concurrent.futures.Future[None]) -> None:
        # A request cancelled before its coroutine ran never reaches its own `finish`.
        if future.cancelled():
            self.finish(error=channel_error(asyncio.CancelledError()))

    def cancel(self) -> bool:
        """Drop the request on the client (the connection is closed; the server may still run it)."""
        return self._future.cancel() if self._future is not None else False


class HttpChannel:
    """One tritonclient asyncio HTTP client on a loop of its own."""

    protocol = ServerProtocol.HTTP

    def __init__(self, endpoint: Endpoint, options: ConnectionOptions) -> None:
        self.endpoint = endpoint
        self.in_flight = 0
        self._admin = options.admin_headers
        tls = endpoint.tls or options.ssl
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name=f"http {endpoint.url}", daemon=True
        )
        self._thread.start()
        self._closed = False
        self._lock = threading.Lock()

        async def make() -> _KServeClient:
            # Made on the loop: aiohttp's session belongs to the loop it was created on.
            client = _KServeClient(
                endpoint.address,
                conn_limit=0,  # no limit of its own: the session's window is the limit
                conn_timeout=None,  # each call has its own deadline (asyncio.timeout)
                ssl=tls,
                ssl_context=ssl_context(options) if tls else False,
            )
            # The same receive limit as a gRPC channel's (the outputs plus their framing).
            client.reply_limit = options.max_output_bytes + REPLY_OVERHEAD_BYTES
            return client

        try:
            self.client = asyncio.run_coroutine_threadsafe(make(), self._loop).result(LOOP_GRACE_S)
        except BaseException:
            self._stop_loop()
            raise

    # -- blocking calls ------------------------------------------------------------------
    def _schedule(self, coroutine: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Run `coroutine` on the channel's loop. Under the lock that close() takes: a
        coroutine scheduled here is always seen (and cancelled) by close's shutdown, never
        left behind on a stopped loop with its request never ending."""
        with self._lock:
            if self._closed:
                coroutine.close()
                raise HttpChannelError("Channel closed!", "CANCELLED")
            return asyncio.run_coroutine_threadsafe(coroutine, self._loop)

    def _run(self, make: Callable[[], Awaitable[T]], timeout_s: float) -> T:
        async def bounded() -> T:
            async with asyncio.timeout(timeout_s):
                return await make()

        future = self._schedule(bounded())
        try:
            return future.result(timeout_s + LOOP_GRACE_S)
        except BaseException as e:
            future.cancel()
            raise channel_error(e) from None

    def is_live(self, *, headers: Headers, timeout_s: float) -> bool:
        return bool(self._run(lambda: self.client.is_server_live(headers=http_headers(headers)), timeout_s))

    def is_model_ready(self, name: str, *, headers: Headers, timeout_s: float, version: str = "") -> bool:
        return bool(
            self._run(
                lambda: self.client.is_model_ready(name, version, headers=http_headers(headers)), timeout_s
            )
        )

    def server_metadata(self, *, headers: Headers, timeout_s: float) -> dict[str, Any]:
        return dict(
            self._run(lambda: self.client.get_server_metadata(headers=http_headers(headers)), timeout_s)
        )

    def repository_index(self, *, headers: Headers, timeout_s: float) -> list[dict[str, Any]]:
        index = self._run(
            lambda: self.client.get_model_repository_index(
                headers=http_headers(self._admin(headers), JSON_BODY)
            ),
            timeout_s,
        )
        return list(index.get("models", []) if isinstance(index, dict) else index)

    def model_metadata(
        self, name: str, *, headers: Headers, timeout_s: float, version: str = ""
    ) -> dict[str, Any]:
        return dict(
            self._run(
                lambda: self.client.get_model_metadata(name, version, headers=http_headers(headers)),
                timeout_s,
            )
        )

    def model_config(
        self, name: str, *, headers: Headers, timeout_s: float, version: str = ""
    ) -> dict[str, Any]:
        config = self._run(
            lambda: self.client.get_model_config(name, version, headers=http_headers(self._admin(headers))),
            timeout_s,
        )
        return dict(config.get("config", config))

    def register_system_shm(self, name: str, key: str, byte_size: int, *, headers: Headers) -> None:
        self._run(
            lambda: self.client.register_system_shared_memory(
                name, key, byte_size, headers=http_headers(self._admin(headers), JSON_BODY)
            ),
            LOOP_GRACE_S * 2,
        )

    def unregister_system_shm(self, name: str, *, headers: Headers) -> None:
        # By name, never "all": that would free other clients' regions too.
        self._run(
            lambda: self.client.unregister_system_shared_memory(
                name, headers=http_headers(self._admin(headers))
            ),
            LOOP_GRACE_S * 2,
        )

    def system_shm_names(self, *, headers: Headers, timeout_s: float) -> list[str]:
        status = self._run(
            lambda: self.client.get_system_shared_memory_status(headers=http_headers(self._admin(headers))),
            timeout_s,
        )
        # KServe's HTTP status is a list of regions (gRPC's JSON: {"regions": {name: ...}}).
        if isinstance(status, dict):
            return sorted(status.get("regions", {}))
        return sorted(str(region.get("name", "")) for region in status or [] if region.get("name"))

    def inference_statistics(
        self, model: str, *, headers: Headers, timeout_s: float, version: str = ""
    ) -> dict[str, Any]:
        return dict(
            self._run(
                lambda: self.client.get_inference_statistics(
                    model, version, headers=http_headers(self._admin(headers))
                ),
                timeout_s,
            )
        )

    def load_model(
        self,
        name: str,
        *,
        headers: Headers,
        timeout_s: float,
        config: str | None = None,
        files: Mapping[str, bytes] | None = None,
    ) -> None:
        uploads = dict(files) if files else None
        self._run(
            lambda: self.client.load_model(
                name, headers=http_headers(self._admin(headers), JSON_BODY), config=config, files=uploads
            ),
            timeout_s,
        )

    def unload_model(self, name: str, *, headers: Headers, timeout_s: float) -> None:
        self._run(
            lambda: self.client.unload_model(name, headers=http_headers(self._admin(headers))), timeout_s
        )

    def trace_settings(self, model: str, *, headers: Headers, timeout_s: float) -> TraceSettingsJson:
        return trace_settings_json(
            self._run(
                lambda: self.client.get_trace_settings(
                    model_name=model or None, headers=http_headers(self._admin(headers))
                ),
                timeout_s,
            )
        )

    def update_trace_settings(
        self, model: str, settings: dict[str, Any], *, headers: Headers, timeout_s: float
    ) -> TraceSettingsJson:
        return trace_settings_json(
            self._run(
                lambda: self.client.update_trace_settings(
                    model_name=model or None,
                    settings=settings,
                    headers=http_headers(self._admin(headers), JSON_BODY),
                ),
                timeout_s,
            )
        )

    # -- inference -----------------------------------------------------------------------
    def send(
        self,
        *,
        model_name: str,
        inputs: list[Any],
        outputs: list[Any],
        request_id: str,
        client_timeout: float,
        headers: Headers | None,
        on_done: ReplyCallback,
        model_version: str = "",
    ) -> Call:
        call = _HttpCall(on_done)

        async def infer() -> None:
            try:
                async with asyncio.timeout(client_timeout):
                    result = await self.client.infer(
                        model_name,
                        inputs,
                        model_version=model_version,
                        outputs=outputs,
                        request_id=request_id,
                        headers=http_headers(headers, JSON_BODY),
                    )
            except asyncio.CancelledError:
                call.finish(error=channel_error(asyncio.CancelledError()))
                raise
            except BaseException as e:
                call.finish(error=channel_error(e))
                return
            call.finish(result=result)

        call.attach(self._schedule(infer()))
        return call

    # -- lifetime ------------------------------------------------------------------------
    def close(self) -> None:
        """Cancel what is in flight (each reply callback gets CANCELLED), close the client,
        stop the loop (idempotent)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True

        async def shutdown() -> None:
            me = asyncio.current_task()
            tasks = [t for t in asyncio.all_tasks() if t is not me]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await self.client.close()

        if threading.current_thread() is self._thread:  # from a reply callback: cannot wait here
            self._loop.create_task(shutdown()).add_done_callback(lambda _t: self._loop.stop())
            return
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(shutdown(), self._loop).result(CLOSE_TIMEOUT_S)
        self._stop_loop()

    def _stop_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(CLOSE_TIMEOUT_S)
        if not self._thread.is_alive():
            self._loop.close()
