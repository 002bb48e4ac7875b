"""A channel written for the tests, behind the session's transport seam (`channel_factory`).

It serves one model shaped like the bundled face detector (raw UINT8 image in, EfficientNMS
out) and lets a test decide, request by request, when and how each call ends: at once
inside `send()` (a reply before `send` returns), later from the test's thread, or with a
gRPC error. tritonclient itself is not mocked: errors are its own InferenceServerException.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from tritonclient.utils import InferenceServerException

from app.inference.protocol import Endpoint, ServerProtocol
from app.inference.transports.channel import ConnectionOptions, ReplyCallback

MODEL = "fake_faces"
NO_TRACING = "the fake server has no tracing"
METADATA: dict[str, Any] = {
    "name": MODEL,
    "versions": ["1"],
    "platform": "python",
    "inputs": [{"name": "image", "datatype": "UINT8", "shape": ["-1", "-1", "-1", "3"]}],
    "outputs": [
        {"name": "num_dets", "datatype": "INT32", "shape": ["-1", "1"]},
        {"name": "det_boxes", "datatype": "FP32", "shape": ["-1", "100", "4"]},
        {"name": "det_scores", "datatype": "FP32", "shape": ["-1", "100"]},
        {"name": "det_classes", "datatype": "INT32", "shape": ["-1", "100"]},
    ],
}
CONFIG: dict[str, Any] = {
    "name": MODEL,
    "backend": "python",
    "max_batch_size": 8,
    "parameters": {"labels": {"string_value": "face"}},
}
BOX = (10.0, 20.0, 30.0, 40.0)


def unavailable() -> InferenceServerException:
    return InferenceServerException(
        msg="failed to connect to all addresses; last error: UNKNOWN: Connection refused",
        status="StatusCode.UNAVAILABLE",
    )


class Reply:
    """One face at BOX with score 0.9, as the face detector answers."""

    def as_numpy(self, name: str) -> np.ndarray:
        boxes = np.zeros((1, 100, 4), np.float32)
        boxes[0, 0] = BOX
        scores = np.zeros((1, 100), np.float32)
        scores[0, 0] = 0.9
        return {
            "num_dets": np.array([[1]], np.int32),
            "det_boxes": boxes,
            "det_scores": scores,
            "det_classes": np.zeros((1, 100), np.int32),
        }[name]


@dataclass
class Call:
    """A request in flight on the fake channel."""

    request_id: str
    on_done: ReplyCallback
    timeout: float
    model_version: str = ""
    headers: Mapping[str, str] | None = None
    cancelled: bool = False
    ended: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def cancel(self) -> None:
        # As gRPC does: a cancel of a call still in flight ends it with CANCELLED.
        self.cancelled = True
        self.end(
            error=InferenceServerException(
                msg="Locally cancelled by application!", status="StatusCode.CANCELLED"
            )
        )

    def end(self, result: Any = None, error: Any = None) -> bool:
        """Deliver the call's end once (later calls are ignored, as gRPC's future would)."""
        with self._lock:
            if self.ended:
                return False
            self.ended = True
        self.on_done(result=result, error=error)
        return True

    def reply(self) -> bool:
        return self.end(result=Reply())


# How a FakeChannel handles one send: return normally (the test ends the call later), or end
# it inside send() (reply before send returns), or raise.
Behaviour = Callable[[Call], None]


def keep(call: Call) -> None:
    """The call stays in flight until the test ends it."""


def reply_at_once(call: Call) -> None:
    call.reply()


class FakeServer:
    """Shared by every channel a session makes: what each send does, and the calls seen."""

    def __init__(self, behaviours: list[Behaviour] | None = None, default: Behaviour = reply_at_once) -> None:
        self.behaviours = list(behaviours or [])
        self.default = default
        self.calls: list[Call] = []
        self.channels: list[FakeChannel] = []
        self.lock = threading.Lock()
        self.sent = threading.Condition(self.lock)
        self.live = True  # False: every call fails as a server that is down does (UNAVAILABLE)

    def factory(self, endpoint: Endpoint, options: ConnectionOptions) -> FakeChannel:
        channel = FakeChannel(endpoint, self)
        self.channels.append(channel)
        return channel

    def next_behaviour(self) -> Behaviour:
        with self.lock:
            return self.behaviours.pop(0) if self.behaviours else self.default

    def wait_for_calls(self, n: int, timeout: float = 5.0) -> list[Call]:
        with self.sent:
            assert self.sent.wait_for(lambda: len(self.calls) >= n, timeout), f"{len(self.calls)} of {n} sent"
            return list(self.calls)


class FakeChannel:
    protocol = ServerProtocol.GRPC

    def __init__(self, endpoint: Endpoint, server: FakeServer) -> None:
        self.endpoint = endpoint
        self.in_flight = 0
        self.server = server
        self.closed = False
        self.calls: list[Call] = []

    def is_live(self, *, headers: Mapping[str, str], timeout_s: float) -> bool:
        if not self.server.live:
            raise unavailable()
        return True

    def server_metadata(self, *, headers: Mapping[str, str], timeout_s: float) -> dict[str, Any]:
        return {"name": "fake", "version": "0", "extensions": []}

    def is_model_ready(
        self, name: str, *, headers: Mapping[str, str], timeout_s: float, version: str = ""
    ) -> bool:
        return name == MODEL

    def repository_index(self, *, headers: Mapping[str, str], timeout_s: float) -> list[dict[str, Any]]:
        return [{"name": MODEL, "version": "1", "state": "READY"}]

    def model_metadata(
        self, name: str, *, headers: Mapping[str, str], timeout_s: float, version: str = ""
    ) -> dict[str, Any]:
        return METADATA

    def model_config(
        self, name: str, *, headers: Mapping[str, str], timeout_s: float, version: str = ""
    ) -> dict[str, Any]:
        return CONFIG

    def send(
        self,
        *,
        model_name: str,
        inputs: list[Any],
        outputs: list[Any],
        request_id: str,
        client_timeout: float,
        headers: Mapping[str, str] | None,
        on_done: ReplyCallback,
        model_version: str = "",
    ) -> Call:
        if self.closed:
            raise InferenceServerException(msg="Channel closed!", status="StatusCode.CANCELLED")
        call = Call(request_id, on_done, client_timeout, model_version, headers)
        behaviour = self.server.next_behaviour()
        self.calls.append(call)
        with self.server.sent:
            self.server.calls.append(call)
            self.server.sent.notify_all()
        behaviour(call)
        return call

    def register_system_shm(self, name: str, key: str, byte_size: int, *, headers: Mapping[str, str]) -> None:
        raise InferenceServerException(
            msg="the fake server has no shared memory", status="StatusCode.UNAVAILABLE"
        )

    def unregister_system_shm(self, name: str, *, headers: Mapping[str, str]) -> None:
        pass

    def system_shm_names(self, *, headers: Mapping[str, str], timeout_s: float) -> list[str]:
        return []

    def inference_statistics(
        self, model: str, *, headers: Mapping[str, str], timeout_s: float, version: str = ""
    ) -> dict[str, Any]:
        return {"model_stats": []}

    def load_model(
        self,
        name: str,
        *,
        headers: Mapping[str, str],
        timeout_s: float,
        config: str | None = None,
        files: Mapping[str, bytes] | None = None,
    ) -> None:
        raise InferenceServerException(
            msg="the fake server has no repository", status="StatusCode.UNIMPLEMENTED"
        )

    def unload_model(self, name: str, *, headers: Mapping[str, str], timeout_s: float) -> None:
        raise InferenceServerException(
            msg="the fake server has no repository", status="StatusCode.UNIMPLEMENTED"
        )

    def trace_settings(self, model: str, *, headers: Mapping[str, str], timeout_s: float) -> dict[str, Any]:
        raise InferenceServerException(msg=NO_TRACING, status="StatusCode.UNIMPLEMENTED")

    def update_trace_settings(
        self, model: str, settings: dict[str, Any], *, headers: Mapping[str, str], timeout_s: float
    ) -> dict[str, Any]:
        raise InferenceServerException(msg=NO_TRACING, status="StatusCode.UNIMPLEMENTED")

    def close(self) -> None:
        self.closed = True
        # As tritonclient does: closing the channel ends every call still in flight.
        for call in list(self.calls):
            call.end(error=InferenceServerException(msg="Channel closed!", status="StatusCode.CANCELLED"))
