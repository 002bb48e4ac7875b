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


# The bundled repository's models, what each is (About, `serve --help`): all of them Google
# MediaPipe's networks (Apache-2.0, a LICENSE in each folder), or pipelines of them.
BUNDLED_MODELS = {
    "face_detector": "BlazeFace short-range face detector, six landmarks per face",
    "face_landmark": "MediaPipe Face Mesh landmarks, 468 per face crop",
    "face_mesh": "pipeline: face_detector, then face_landmark on each face",
    "person_segmentation": "MediaPipe Selfie Segmentation, a person mask",
    "pose_detector": "BlazePose person detector",
    "pose_landmark": "BlazePose full-body landmarks, 33 per person crop",
    "person_pose": "pipeline: pose_detector, then pose_landmark on each person",
}


def model_repository() -> Path:
    return resources_dir() / "model_repository"


def bundled_models() -> list[str]:
    """The models of the bundled repository (its folders holding a config.pbtxt), sorted."""
    root = model_repository()
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / "config.pbtxt").is_file())


def sample_image() -> Path:
    return resources_dir() / "samples" / "astronaut.jpg"


def app_icon() -> Path:
    """The 256x256 application icon (packaging/icons in a checkout; the spec copies it to
    resources/icons in a frozen build)."""
    if getattr(sys, "_MEIPASS", None):
        return resources_dir() / "icons" / "triton-viewer.png"
    return Path(__file__).resolve().parent.parent / "packaging" / "icons" / "triton-viewer.png"


def model_files_dir() -> Path:
    """The Python-backend models that serve a model file (onnx_model.py, tflite_model.py)."""
    return resources_dir() / "model_files"
