"""MediaPipe's BlazePose person detector on Triton's Python backend, with TensorFlow Lite.

Does what MediaPipe's pose_detection_cpu graph does: the whole image letterboxed into
224x224 (ImageToTensorCalculator: keep aspect ratio, black border, values in [-1, 1]), SSD
anchors (5 layers, strides 8, 16, 32, 32, 32, fixed size), decoding (box then 4 keypoints,
scales 224), scores >= 0.5, weighted non-max suppression (IoU 0.3), and the letterbox
removed. Answers in the EfficientNMS layout plus det_keypoints (see config.pbtxt).
"""

from __future__ import annotations

import json
import math
import os
import sys

import cv2
import numpy as np
from tflite_runtime.interpreter import Interpreter

MODEL_FILE = "pose_detection.tflite"
SIZE = 224
STRIDES = (8, 16, 32, 32, 32)
ANCHORS_PER_LAYER = 2  # aspect ratio 1.0 and the interpolated scale
NUM_KEYPOINTS = 4
MAX_DETS = 100


def make_anchors(size: int = SIZE, strides: tuple[int, ...] = STRIDES) -> np.ndarray:
    """(N, 2) anchor centres, normalised, as MediaPipe's SsdAnchorsCalculator lays them out:
    consecutive layers of one stride share a grid (28x28 x 2, 14x14 x 2, 7x7 x 6 = 2254)."""
    anchors, i = [], 0
    while i < len(strides):
        stride, per_cell = strides[i], 0
        while i < len(strides) and strides[i] == stride:
            per_cell += ANCHORS_PER_LAYER
            i += 1
        grid = math.ceil(size / stride)
        ys, xs = np.meshgrid(np.arange(grid), np.arange(grid), indexing="ij")
        centres = np.stack([(xs + 0.5) / grid, (ys + 0.5) / grid], axis=-1).reshape(-1, 2)
        anchors.append(np.repeat(centres, per_cell, axis=0))
    return np.concatenate(anchors)


class TritonPythonModel:
    def initialize(self, args: dict) -> None:
        cv2.setNumThreads(1)
        config = json.loads(args["model_config"])
        params = {k: v["string_value"] for k, v in config.get("parameters", {}).items()}
        self.score_threshold = float(params.get("score_threshold", 0.5))
        self.iou_threshold = float(params.get("iou_threshold", 0.3))
        # The shared helpers are copies inside this model's own folder (beside this file), so
        # the folder alone deploys into any repository (tests/unit/test_bundled_helpers.py keeps
        # the copies equal). No bytecode: an installed repository may be read-only.
        sys.dont_write_bytecode = True
        sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
        import mediapipe_rules
        import pipeline_stages

        self.regions, self.stages = mediapipe_rules, pipeline_stages
        path = os.path.join(args["model_repository"], args["model_version"], MODEL_FILE)
        self.interpreter = Interpreter(model_path=path, num_threads=1)
        self.interpreter.allocate_tensors()
        self.input_index = self.interpreter.get_input_details()[0]["index"]
        by_width = {int(d["shape"][-1]): d["index"] for d in self.interpreter.get_output_details()}
        self.regressors_index, self.scores_index = by_width[4 + 2 * NUM_KEYPOINTS], by_width[1]
        self.anchors = make_anchors()

    def detect(self, image: np.ndarray) -> list[tuple]:
        """[(box x1, y1, x2, y2, keypoints (4, 2), score)] in the image's pixels, unclipped."""
        h, w = image.shape[:2]
        letterbox = self.regions.whole_image(w, h)
        tensor = self.regions.crop(image, letterbox, SIZE, replicate_border=False).astype(np.float32) / 127.5 - 1.0
        self.interpreter.set_tensor(self.input_index, tensor[None])
        self.interpreter.invoke()
        raw = self.interpreter.get_tensor(self.regressors_index)[0].astype(np.float64)
        logits = self.interpreter.get_tensor(self.scores_index)[0, :, 0].astype(np.float64)
        scores = 1.0 / (1.0 + np.exp(-np.clip(logits, -100, 100)))
        keep = scores >= self.score_threshold
        raw, scores, anchors = raw[keep], scores[keep], self.anchors[keep]
        # reverse_output_order: x_centre, y_centre, w, h, then keypoints (x, y); scales 224.
        cx, cy = raw[:, 0] / SIZE + anchors[:, 0], raw[:, 1] / SIZE + anchors[:, 1]
        bw, bh = raw[:, 2] / SIZE, raw[:, 3] / SIZE
        boxes = np.stack([cx - bw / 2, cy - bh / 2, cx + bw / 2, cy + bh / 2], axis=1)
        points = raw[:, 4 : 4 + 2 * NUM_KEYPOINTS].reshape(-1, NUM_KEYPOINTS, 2) / SIZE + anchors[:, None, :]
        found = []
        for box, kps, score in self.regions.weighted_nms(boxes, points, scores, self.iou_threshold, MAX_DETS):
            # From the letterboxed tensor (normalised) back to the image's pixels.
            corners = self.regions.project(box.reshape(2, 2) * SIZE, letterbox, SIZE).reshape(4)
            found.append((corners, self.regions.project(kps * SIZE, letterbox, SIZE), score))
        return found

    def people(self, image: np.ndarray, trace: object = None) -> list[tuple]:
        """[(box clipped to the image, score, keypoints (4, 3) unclipped)] of one image (no
        stage models: the request's trace is not needed)."""
        h, w = image.shape[:2]
        return [
            (np.clip(box, 0, [w, h, w, h]), score, np.concatenate([kps, np.full((NUM_KEYPOINTS, 1), score)], axis=1))
            for box, kps, score in self.detect(image)
        ]

    def execute(self, requests: list) -> list:
        return self.stages.answer(requests, self.people, MAX_DETS, NUM_KEYPOINTS)

    def finalize(self) -> None:
        self.interpreter = None
