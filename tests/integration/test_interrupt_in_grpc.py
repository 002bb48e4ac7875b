"""A signal that comes while the main thread is inside gRPC is held until the call returns:
raised there, it leaves the channel a call it waits for forever at close (grpc/grpc#19973)."""

from __future__ import annotations

import os
import signal
import threading
import time

import numpy as np
import pytest
import tritonclient.grpc as grpcclient

from app.commands.interrupts import Terminated, termination_as_interrupt
from app.server.embedded import EmbeddedServer

DELAY_S = 1.5


def slow_request() -> grpcclient.InferInput:
    image = np.zeros((1, 8, 8, 3), np.uint8)
    image[0, 0, 0, 0] = int(DELAY_S * 100)  # slow_faces: pixel [0,0,0] x 10 ms
    request = grpcclient.InferInput("image", list(image.shape), "UINT8")
    request.set_data_from_numpy(image)
    return request


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_during_a_blocking_call_waits_for_its_answer(
    triton: EmbeddedServer, sig: signal.Signals
) -> None:
    client = grpcclient.InferenceServerClient(triton.grpc_url)
    answers: list[object] = []
    closed = threading.Event()
    try:
        threading.Timer(0.3, os.kill, (os.getpid(), sig)).start()
        started = time.monotonic()
        with pytest.raises(KeyboardInterrupt) as caught, termination_as_interrupt():
            answers.append(client.infer("slow_faces", [slow_request()], client_timeout=30))
            while True:  # back in our code: the held signal comes now
                time.sleep(0.01)
        held_s = time.monotonic() - started
    finally:
        # Without the hold, close() never returned: bounded here by a thread, not a hang.
        closer = threading.Thread(target=lambda: (client.close(), closed.set()), daemon=True)
        closer.start()
        closer.join(10)
    assert answers, "the call was not cut short"
    assert held_s >= DELAY_S * 0.9
    assert isinstance(caught.value, Terminated) == (sig is signal.SIGTERM)
    assert closed.is_set(), "the channel closed"
