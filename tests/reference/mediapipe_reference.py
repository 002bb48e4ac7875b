"""MediaPipe's own answers for the pipeline tests: runs INSIDE the MediaPipe venv
(tests/reference/setup_mediapipe.sh), never imported by the product or its venv.

Reads JSON on stdin: {"images": ["a.png", ...], "max_faces": 10}
Writes JSON on stdout:
  {"mediapipe": "0.10.14",
   "model_files": {"face_landmark.tflite": {"path", "sha256"}, ...},  # what its solutions run
   "photos": {"bus.jpg": path, ...},                       # photos this venv carries
   "results": [{"width", "height",
                "faces": [[[x, y], ... 468]],              # solutions.face_mesh, image pixels
                "poses": [[[x, y, visibility], ... 33]]}]} # solutions.pose (one person at most)

Both solutions run in static-image mode (every image on its own, no tracking or smoothing),
the face mesh without iris refinement (face_landmark.tflite, 468 points), the pose with model
complexity 1 (pose_landmark_full.tflite).
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import cv2
import mediapipe as mp

MODULES = Path(mp.__file__).parent / "modules"
MODEL_FILES = {
    "face_detection_short_range.tflite": MODULES / "face_detection" / "face_detection_short_range.tflite",
    "face_landmark.tflite": MODULES / "face_landmark" / "face_landmark.tflite",
    "pose_detection.tflite": MODULES / "pose_detection" / "pose_detection.tflite",
    "pose_landmark_full.tflite": MODULES / "pose_landmark" / "pose_landmark_full.tflite",
}


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _photos() -> dict[str, str]:
    """Photos of people this venv carries: the `ultralytics` wheel's assets (whole bodies in a
    street, two men) and matplotlib's portrait (MediaPipe depends on matplotlib)."""
    import importlib.util

    import matplotlib

    found = {"grace_hopper.jpg": str(Path(matplotlib.get_data_path()) / "sample_data" / "grace_hopper.jpg")}
    spec = importlib.util.find_spec("ultralytics")
    if spec is not None and spec.submodule_search_locations:
        assets = Path(next(iter(spec.submodule_search_locations))) / "assets"
        found.update({p.name: str(p) for p in sorted(assets.glob("*.jpg"))})
    return found


def main() -> int:
    request = json.load(sys.stdin)
    max_faces = int(request.get("max_faces", 10))
    results = []
    face_mesh = mp.solutions.face_mesh.FaceMesh(
        static_image_mode=True, max_num_faces=max_faces, refine_landmarks=False, min_detection_confidence=0.5
    )
    pose = mp.solutions.pose.Pose(
        static_image_mode=True, model_complexity=1, enable_segmentation=False, min_detection_confidence=0.5
    )
    with face_mesh, pose:
        for name in request.get("images", []):
            bgr = cv2.imread(name, cv2.IMREAD_COLOR)
            if bgr is None:
                results.append({"error": f"cannot read {name}"})
                continue
            rgb = cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)
            h, w = rgb.shape[:2]
            faces = face_mesh.process(rgb).multi_face_landmarks or []
            found = pose.process(rgb).pose_landmarks
            results.append(
                {
                    "width": w,
                    "height": h,
                    "faces": [[[p.x * w, p.y * h] for p in face.landmark] for face in faces],
                    "poses": [[[p.x * w, p.y * h, p.visibility] for p in found.landmark]] if found else [],
                }
            )
    json.dump(
        {
            "mediapipe": mp.__version__,
            "model_files": {
                name: {"path": str(path), "sha256": _sha256(path)} for name, path in MODEL_FILES.items()
            },
            "photos": _photos(),
            "results": results,
        },
        sys.stdout,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
