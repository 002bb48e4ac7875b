"""`open_session(spec)`: the one way the app opens a session (the viewer's connection, `infer`,
`bench`, `compare`, the load sweep, the viewer's A/B compare and the smoke test)."""

from __future__ import annotations

from collections.abc import Callable

from app.inference.core.session import TritonSession
from app.inference.core.spec import SessionSpec


def open_session(
    spec: SessionSpec, *, on_created: Callable[[TritonSession], None] | None = None
) -> TritonSession:
    """Build the session and open it (blocking: it reads the profile file, if any, and
    connects; never on a GUI thread). Raises ProfileError for an unreadable profile file,
    SessionError otherwise.

    `on_created(session)` sees the session before open() blocks on the network, so that
    another thread can abandon the attempt (`session.close()` makes open() fail at once)."""
    session = TritonSession(spec)
    if on_created is not None:
        on_created(session)
    return session.open()
