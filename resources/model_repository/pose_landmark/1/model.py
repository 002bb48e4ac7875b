"""MediaPipe's BlazePose full-body landmark model on Triton's Python backend, with TensorFlow Lite.

A batch of 256x256 RGB UINT8 person crops in; per crop, 39 landmarks (x, y in crop pixels,
z, visibility, presence) and the person's presence probability out. The x, y are refined
from the heatmap output as MediaPipe's RefineLandmarksFromHeatmapCalculator does (kernel 7,
refined where the heatmap is confident). The crops are cut by the caller (person_pose).
"""

from __future__ import annotations

import os

import numpy as np
import triton_python_backend_utils as pb_utils
from tflite_runtime.interpreter import Interpreter

MODEL_FILE = "pose_landmark_full.tflite"
SIZE = 256
NUM_LANDMARKS = 39
KERNEL = 7  # pose_landmark_by_roi_cpu: RefineLandmarksFromHeatmapCalculator kernel_size
MIN_CONFIDENCE_TO_REFINE = 0.5


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.asarray(x, np.float64)))


def refine_from_heatmap(xy: np.ndarray, heatmap: np.ndarray) -> np.ndarray:
    """(K, 2) x, y normalised to the crop -> refined the way MediaPipe does: the confidence-
    weighted mean cell of a KERNEL x KERNEL window of each landmark's heatmap (H, W, K raw
    logits) around it, kept where that window's best confidence reaches 0.5."""
    h, w, _ = heatmap.shape
    out = np.array(xy, np.float64)
    half = (KERNEL - 1) // 2
    for i in range(len(out)):
        col, row = int(out[i, 0] * w), int(out[i, 1] * h)  # truncated toward zero, as in C++
        # MediaPipe's own bounds check (it compares the column with the height, not the row).
        if col < 0 or col >= w or row < 0 or col >= h:
            continue
        r0, r1, c0, c1 = max(0, row - half), min(h, row + half + 1), max(0, col - half), min(w, col + half + 1)
        confidence = _sigmoid(heatmap[r0:r1, c0:c1, i])
        total = confidence.sum()
        if confidence.size and confidence.max() >= MIN_CONFIDENCE_TO_REFINE and total > 0:
            rows, cols = np.mgrid[r0:r1, c0:c1]
            out[i] = (cols * confidence).sum() / w / total, (rows * confidence).sum() / h / total
    return out


class TritonPythonModel:
    def initialize(self, args: dict) -> None:
        path = os.path.join(args["model_repository"], args["model_version"], MODEL_FILE)
        # One thread: instances and the other stages already share the cores.
        self.interpreter = Interpreter(model_path=path, num_threads=1)
        self.interpreter.allocate_tensors()
        self.input_index = self.interpreter.get_input_details()[0]["index"]
        by_shape = {tuple(d["shape"][1:]): d["index"] for d in self.interpreter.get_output_details()}
        self.landmarks_index = by_shape[(NUM_LANDMARKS * 5,)]
        self.presence_index = by_shape[(1,)]
        self.heatmap_index = by_shape[(64, 64, NUM_LANDMARKS)]

    def _one(self, crop: np.ndarray) -> tuple[np.ndarray, float]:
        # As MediaPipe's ImageToTensorCalculator: values in [0, 1].
        self.interpreter.set_tensor(self.input_index, (crop.astype(np.float32) / 255.0)[None])
        self.interpreter.invoke()
        raw = self.interpreter.get_tensor(self.landmarks_index).reshape(NUM_LANDMARKS, 5).astype(np.float64)
        heatmap = self.interpreter.get_tensor(self.heatmap_index)[0]
        landmarks = raw.copy()
        landmarks[:, :2] = refine_from_heatmap(raw[:, :2] / SIZE, heatmap) * SIZE
        landmarks[:, 3:5] = _sigmoid(raw[:, 3:5])  # visibility, presence: logits in the model
        # The pose flag is a probability already (MediaPipe thresholds it as it is).
        presence = float(self.interpreter.get_tensor(self.presence_index).reshape(-1)[0])
        return landmarks.astype(np.float32), presence

    def execute(self, requests: list) -> list:
        responses = []
        for request in requests:
            crops = pb_utils.get_input_tensor_by_name(request, "image").as_numpy()
            landmarks = np.zeros((len(crops), NUM_LANDMARKS, 5), np.float32)
            presence = np.zeros((len(crops), 1), np.float32)
            for i, crop in enumerate(crops):
                landmarks[i], presence[i, 0] = self._one(crop)
            responses.append(
                pb_utils.InferenceResponse(
                    output_tensors=[pb_utils.Tensor("landmarks", landmarks), pb_utils.Tensor("presence", presence)]
                )
            )
        return responses

    def finalize(self) -> None:
        self.interpreter = None
