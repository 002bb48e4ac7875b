"""Can the embedded local server run here? For the viewer's first-run dialog and the smoke test."""

from __future__ import annotations

from app.server.errors import TritonNotFoundError
from app.server.install import find_tritonserver


def embedded_available() -> tuple[bool, str]:
    """(True, "") when the embedded server can be started, else (False, a sentence saying why
    and what to do: no tritonserver binary here (the wheel is Linux-only), an unusable
    $TRITON_VIEWER_PYTHON, or use --url).

    The first call may probe a Python runtime in a subprocess (about a second): call it off
    the GUI thread. Later calls are cached.
    """
    try:
        find_tritonserver()
    except TritonNotFoundError as e:
        return False, str(e)
    return True, ""
