"""The two bundled real models beyond boxes, through the app's own pipeline: the face
detector's six landmarks and the person segmentation mask on the astronaut photograph,
checked against OpenCV's independent Haar detectors and regions of the photo."""

from __future__ import annotations

import json

import cv2
import numpy as np
import pytest
import skimage.data
import tritonclient.grpc as grpcclient

from app.inference.core.session import TritonSession
from app.inference.core.spec import SessionSpec
from app.inference.masks import decode_rle
from app.inference.protocol import parse_endpoints
from app.inference.result import InferenceResult
from app.server.embedded import EmbeddedServer
from tests.integration.test_cli_infer import bgr, parse, run_cli

pytestmark = pytest.mark.slow


def _infer(url: str, model: str, image: np.ndarray) -> InferenceResult:
    with TritonSession(SessionSpec(endpoints=parse_endpoints(url), model=model)) as session:
        result = session.infer(image, source="astronaut")
    assert result.ok, result.error
    return result


def _haar(image_rgb: np.ndarray, cascade: str, neighbours: int) -> np.ndarray:
    finder = cv2.CascadeClassifier(cv2.data.haarcascades + cascade)
    found = finder.detectMultiScale(cv2.cvtColor(image_rgb, cv2.COLOR_RGB2GRAY), 1.1, neighbours)
    return np.array([[x, y, x + w, y + h] for x, y, w, h in found], np.float32).reshape(-1, 4)


def _inside(point: tuple[float, float, float], box: np.ndarray) -> bool:
    x, y, _ = point
    return bool(box[0] <= x <= box[2] and box[1] <= y <= box[3])


def test_face_landmarks_sit_on_the_eyes_nose_mouth_and_ears(triton: EmbeddedServer) -> None:
    photo = skimage.data.astronaut()
    result = _infer(triton.grpc_url, "face_detector", photo)
    assert len(result.detections) == 1
    face = result.detections[0]
    assert face.keypoints is not None and len(face.keypoints) == 6
    right_eye, left_eye, nose, mouth, right_ear, left_ear = face.keypoints
    x1, y1, x2, y2 = face.box
    crop = np.ascontiguousarray(photo[int(y1) : int(y2), int(x1) : int(x2)])
    offset = np.array([x1, y1, x1, y1], np.float32)
    eyes = _haar(crop, "haarcascade_eye.xml", 5) + offset
    smiles = _haar(crop, "haarcascade_smile.xml", 20) + offset
    assert len(eyes) == 2 and len(smiles) == 1, (eyes, smiles)
    image_left_eye, image_right_eye = sorted(eyes, key=lambda b: b[0])
    # MediaPipe's "right eye" is the person's right: on the image's left.
    assert _inside(right_eye, image_left_eye) and _inside(left_eye, image_right_eye)
    assert _inside(mouth, smiles[0])
    eye_y = (right_eye[1] + left_eye[1]) / 2
    assert right_eye[0] < nose[0] < left_eye[0] and eye_y < nose[1] < mouth[1]
    width = x2 - x1
    assert abs(right_ear[0] - x1) < 0.1 * width and abs(left_ear[0] - x2) < 0.1 * width
    for ear in (right_ear, left_ear):
        assert eye_y - 0.1 * width < ear[1] < mouth[1]
    assert all(s == pytest.approx(face.score, abs=1e-4) for _, _, s in face.keypoints)


def test_face_detector_still_answers_its_four_outputs_alone(triton: EmbeddedServer) -> None:
    """Clients written for the four EfficientNMS outputs keep working unchanged."""
    photo = skimage.data.astronaut()
    client = grpcclient.InferenceServerClient(triton.grpc_url)
    try:
        inp = grpcclient.InferInput("image", [1, *photo.shape], "UINT8")
        inp.set_data_from_numpy(photo[None])
        names = ["num_dets", "det_boxes", "det_scores", "det_classes"]
        result = client.infer(
            "face_detector", [inp], outputs=[grpcclient.InferRequestedOutput(n) for n in names]
        )
        assert result.as_numpy("det_keypoints") is None
        assert int(result.as_numpy("num_dets")[0, 0]) == 1
    finally:
        client.close()


def test_person_mask_covers_the_person_and_not_the_background(triton: EmbeddedServer) -> None:
    photo = skimage.data.astronaut()  # 512x512: flag on the left, shuttle model on the right
    result = _infer(triton.grpc_url, "person_segmentation", photo)
    assert result.detections == [] and result.masks is not None
    assert [(m.class_id, m.label) for m in result.masks] == [(0, "person")]
    mask = result.masks[0].mask.full()
    assert mask.shape == (512, 512)
    face = _haar(photo, "haarcascade_frontalface_default.xml", 5)
    assert len(face) == 1
    fx1, fy1, fx2, fy2 = face[0].astype(int)
    inner = mask[
        fy1 + (fy2 - fy1) // 5 : fy2 - (fy2 - fy1) // 5, fx1 + (fx2 - fx1) // 5 : fx2 - (fx2 - fx1) // 5
    ]
    assert inner.mean() > 0.98  # the face
    assert mask[300:500, 150:350].mean() > 0.98  # the suit
    assert mask[20:260, 370:460].mean() < 0.02  # the shuttle model
    assert mask[0:250, 0:60].mean() < 0.05  # the flag
    assert mask[0:60, 0:120].mean() < 0.02  # the wall above the flag


def test_infer_writes_landmarks_and_the_person_mask(triton: EmbeddedServer, tmp_path) -> None:
    path = tmp_path / "astronaut.png"
    cv2.imwrite(str(path), bgr(skimage.data.astronaut()))
    faces = run_cli("infer", "--url", triton.grpc_url, "--model", "face_detector", str(path))
    assert faces.returncode == 0, faces.stderr
    (record,), _ = parse(faces.stdout)
    (face,) = record["detections"]
    assert len(face["keypoints"]) == 6 and all(len(k) == 3 for k in face["keypoints"])
    assert "masks" not in record and "classes" not in record and "mask" not in face
    people = run_cli("infer", "--url", triton.grpc_url, "--model", "person_segmentation", str(path))
    assert people.returncode == 0, people.stderr
    (record,), _ = parse(people.stdout)
    assert record["detections"] == []
    (person,) = record["masks"]
    assert (person["class_id"], person["label"]) == (0, "person")
    decoded = decode_rle(person["mask"])
    assert decoded.shape == (512, 512) and int(decoded.sum()) == person["area"]
    assert decoded[300:500, 150:350].mean() > 0.98 and decoded[20:260, 370:460].mean() < 0.02
    json.dumps(record)  # plain JSON types only
