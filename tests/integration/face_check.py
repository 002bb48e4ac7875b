"""Helpers for the face-detector tests: run it, and find faces independently with OpenCV."""

from __future__ import annotations

import cv2
import numpy as np
import tritonclient.grpc as grpcclient


def detect_faces(url: str, image_rgb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(boxes Nx4, scores N) from the served face_detector for one RGB image."""
    client = grpcclient.InferenceServerClient(url)
    try:
        inp = grpcclient.InferInput("image", [1, *image_rgb.shape], "UINT8")
        inp.set_data_from_numpy(np.ascontiguousarray(image_rgb)[None])
        result = client.infer("face_detector", [inp])
        n = int(result.as_numpy("num_dets")[0, 0])
        return result.as_numpy("det_boxes")[0, :n], result.as_numpy("det_scores")[0, :n]
    finally:
        client.close()


def haar_faces(image_rgb: np.ndarray) -> np.ndarray:
    """Faces found by OpenCV's Haar cascade (an independent detector), as x1, y1, x2, y2."""
    cascade = cv2.CascadeClassifier(cv2.data.haarcascades + "haarcascade_frontalface_default.xml")
    gray = cv2.cvtColor(image_rgb, cv2.COLOR_RGB2GRAY)
    found = cascade.detectMultiScale(gray, 1.1, 5, minSize=(40, 40))
    return np.array([[x, y, x + w, y + h] for x, y, w, h in found], np.float32).reshape(-1, 4)


def iou(a: np.ndarray, b: np.ndarray) -> float:
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return float(inter / union)
