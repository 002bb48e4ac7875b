"""Which names may be given to Triton's repository calls (load, unload, config).

Triton takes a model's name as a folder of its repository and joins it to the repository's path
as given: `load ../outside/evil` runs `REPO/../outside/evil/1/model.py` (Triton 2.51,
measured), and the model then appears nowhere. So a name is checked here, before any call: one
folder name of the repository, nothing that walks out of it or hides in it.
"""

from __future__ import annotations

MAX_NAME_BYTES = 255  # a folder name (NAME_MAX on Linux, macOS and Windows' NTFS)


class ModelNameError(ValueError):
    """A name that cannot be a model of a repository: the message names it and the cause."""


def model_name_problem(name: str) -> str | None:
    """Why `name` cannot be a model's name (a folder of a Triton repository), None when it can."""
    if not name:
        return "it is empty"
    if "/" in name or "\\" in name:
        return "it contains a path separator (a model is one folder of the repository)"
    if name.startswith("."):
        return "it starts with a dot ('..' walks out of the repository, a leading dot hides a folder)"
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        return "it contains a control character"
    if len(name.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES:
        return f"it is longer than {MAX_NAME_BYTES} bytes (a folder name's limit)"
    return None


def check_model_name(name: str) -> str:
    """`name` when it can be a model's name; ModelNameError naming it and the cause otherwise."""
    problem = model_name_problem(name)
    if problem is not None:
        raise ModelNameError(f"model name {name!r} refused: {problem}")
    return name
