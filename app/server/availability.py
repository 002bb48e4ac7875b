"""Can the embedded local server run here? For the viewer's first-run dialog and the smoke test."""

from __future__ import annotations

from app.server.errors import TritonNotFoundError
from app.server.install import find_tritonserver


def embedded_available() -> tuple[bool, str]:
    """(True, "") when the embedded server can be started, else (False, a sentence saying why
    and what to do: install Python with numpy<2 + OpenCV, set TRITON_VIEWER_PYTHON, or use --url).

    In a frozen build the first call probes Python installations in subprocesses (up to a
    few seconds): call it off the GUI thread. Later calls are cached.
    """
    try:
        find_tritonserver()
    except TritonNotFoundError as e:
        return False, str(e)
    return True, ""
