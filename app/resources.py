"""Where the bundled resources (model repository, sample images, icons) are."""

from __future__ import annotations

import sys
from pathlib import Path


def resources_dir() -> Path:
    # PyInstaller unpacks data files under sys._MEIPASS; a checkout has them beside app/.
    frozen_root = getattr(sys, "_MEIPASS", None)
    if frozen_root:
        return Path(frozen_root) / "resources"
    return Path(__file__).resolve().parent.parent / "resources"


def model_repository() -> Path:
    return resources_dir() / "model_repository"


def sample_image() -> Path:
    return resources_dir() / "samples" / "astronaut.jpg"


def app_icon() -> Path:
    """The 256x256 application icon (packaging/icons in a checkout; the spec copies it to
    resources/icons in a frozen build)."""
    if getattr(sys, "_MEIPASS", None):
        return resources_dir() / "icons" / "triton-viewer.png"
    return Path(__file__).resolve().parent.parent / "packaging" / "icons" / "triton-viewer.png"
