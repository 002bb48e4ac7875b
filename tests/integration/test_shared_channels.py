"""A session of another model over a session's channels (a wall tile's own model) unregisters
its shared-memory regions through those channels when it closes. The owner's close waits for
the channels it lent to come back, so the regions are unregistered on the server whichever
close starts first: closing the owner first used to close the channels under the borrower,
whose regions then stayed registered (the server keeps them mapped)."""

from __future__ import annotations

import os
import threading
import time

import numpy as np

from app.inference.core.open_session import open_session
from app.inference.core.session import TritonSession
from app.inference.core.shared_channels import sharing_spec
from app.inference.core.spec import Delivery, ProfileSource, SessionSpec
from app.inference.protocol import parse_endpoints
from app.inference.transports.transport import TransportKind
from app.server.embedded import EmbeddedServer
from tests.integration.session_helpers import Collector, wait_until
from tests.integration.test_dead_clients_regions import of, registered


def test_the_borrowers_regions_are_unregistered_when_the_owner_closes_first(triton: EmbeddedServer) -> None:
    before = of(os.getpid(), registered(triton))
    spec = SessionSpec(
        endpoints=parse_endpoints(triton.grpc_url),
        model="face_detector",
        delivery=Delivery(TransportKind.SHM),
    )
    owner = TritonSession(spec).open()
    borrower = open_session(sharing_spec(owner, "slow_faces", ProfileSource()))
    assert borrower.transport is not None and borrower.transport.kind is TransportKind.SHM
    collect = Collector()
    image = np.full((64, 64, 3), 128, np.uint8)
    for session in (owner, borrower):
        session.submit(image, collect, source=session.spec.model)
    assert wait_until(lambda: len(collect.results) == 2, 30)
    assert all(r.ok for r in collect.results), [r.error for r in collect.results]
    used = of(os.getpid(), registered(triton)) - before
    assert len(used) >= 4, f"both sessions' input and output regions are registered: {used}"

    # The owner's close starts first; the borrower's a moment later, on another thread (as
    # the wall closes its tiles' sessions on the executor).
    late = threading.Thread(target=lambda: (time.sleep(0.3), borrower.close(0.5)))
    late.start()
    owner.close(0.5)
    late.join(10)
    assert not late.is_alive()
    left = of(os.getpid(), registered(triton)) - before
    assert left == set(), f"regions left registered on the server: {sorted(left)}"
