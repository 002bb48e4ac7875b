"""BlazeFace short-range on Triton's Python backend, with OpenCV's DNN module.

Takes a raw RGB image of any size, does the letterbox to 128x128, anchor
decoding, score threshold and NMS itself (MediaPipe's weighted NMS, from
mediapipe_rules.py in this model's folder), and answers in the EfficientNMS
layout (num_dets, det_boxes in the input image's pixels, det_scores,
det_classes) so any client gets finished boxes. A fifth output,
det_keypoints [100, 6, 3], gives each face's six landmarks (x, y in the input
image's pixels, then the face's score): right eye, left eye, nose tip, mouth
centre, right ear tragion, left ear tragion. Clients that do not ask for it
are unaffected.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import cv2
import numpy as np
import triton_python_backend_utils as pb_utils

INPUT_SIZE = 128
MAX_DETS = 100
NUM_KEYPOINTS = 6
MODEL_FILE = "face_detection_short_range.tflite"


def make_anchors() -> np.ndarray:
    """896 anchor centres (x, y), normalised: 16x16 grid x 2, then 8x8 grid x 6."""
    anchors = []
    for grid, per_cell in ((16, 2), (8, 6)):
        ys, xs = np.meshgrid(np.arange(grid), np.arange(grid), indexing="ij")
        centres = np.stack([(xs + 0.5) / grid, (ys + 0.5) / grid], axis=-1).reshape(-1, 2)
        anchors.append(np.repeat(centres, per_cell, axis=0))
    return np.concatenate(anchors).astype(np.float32)


def letterbox(image: np.ndarray) -> tuple[np.ndarray, float, float, float]:
    """Resize keeping the aspect ratio into 128x128, zero border (as MediaPipe)."""
    h, w = image.shape[:2]
    scale = INPUT_SIZE / max(h, w)
    nw, nh = max(1, round(w * scale)), max(1, round(h * scale))
    resized = cv2.resize(image, (nw, nh), interpolation=cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR)
    left, top = (INPUT_SIZE - nw) // 2, (INPUT_SIZE - nh) // 2
    canvas = np.zeros((INPUT_SIZE, INPUT_SIZE, 3), np.uint8)
    canvas[top : top + nh, left : left + nw] = resized
    return canvas, scale, left, top


def decode(regressors: np.ndarray, logits: np.ndarray, anchors: np.ndarray, score_threshold: float,
           iou_threshold: float, rules: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Boxes (x1, y1, x2, y2), scores and keypoints ([n, 6, 2] x, y) of one image, in
    128x128 input pixels."""
    raw = np.clip(logits.reshape(-1).astype(np.float64), -100, 100)
    scores = (1.0 / (1.0 + np.exp(-raw))).astype(np.float32)
    mask = scores >= score_threshold
    if not mask.any():
        return np.zeros((0, 4), np.float32), np.zeros((0,), np.float32), np.zeros((0, NUM_KEYPOINTS, 2), np.float32)
    reg, sc, anc = regressors[mask], scores[mask], anchors[mask]
    centres = anc * INPUT_SIZE  # anchor centres in input pixels
    cx = centres[:, 0] + reg[:, 0]
    cy = centres[:, 1] + reg[:, 1]
    w, h = reg[:, 2], reg[:, 3]
    boxes = np.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], axis=1)
    # Columns 4..15: six (x, y) offsets from the anchor centre, in input pixels (as the box centre).
    keypoints = reg[:, 4 : 4 + 2 * NUM_KEYPOINTS].reshape(-1, NUM_KEYPOINTS, 2) + centres[:, None, :]
    # MediaPipe's weighted NMS: overlapping boxes (and keypoints) averaged, weighted by score.
    kept = rules.weighted_nms(boxes, keypoints, sc, iou_threshold, MAX_DETS)
    if not kept:
        return np.zeros((0, 4), np.float32), np.zeros((0,), np.float32), np.zeros((0, NUM_KEYPOINTS, 2), np.float32)
    return (
        np.array([k[0] for k in kept], np.float32),
        np.array([k[2] for k in kept], np.float32),
        np.array([k[1] for k in kept], np.float32),
    )


class TritonPythonModel:
    def initialize(self, args: dict) -> None:
        # One OpenCV thread per instance: instances already run in parallel.
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

        self.rules = mediapipe_rules
        path = os.path.join(args["model_repository"], args["model_version"], MODEL_FILE)
        self.net = cv2.dnn.readNetFromTFLite(path)
        self.anchors = make_anchors()

    def execute(self, requests: list) -> list:
        images, metas, responses = [], [], []
        for request in requests:
            batch = pb_utils.get_input_tensor_by_name(request, "image").as_numpy()
            for image in batch:
                canvas, scale, left, top = letterbox(np.ascontiguousarray(image))
                images.append(canvas)
                metas.append((scale, left, top, image.shape[1], image.shape[0]))
        # One forward pass for every image of every request Triton batched together.
        blob = (np.stack(images).astype(np.float32) / 127.5 - 1.0).transpose(0, 3, 1, 2)
        self.net.setInput(np.ascontiguousarray(blob))
        out_names = self.net.getUnconnectedOutLayersNames()
        outputs = dict(zip(out_names, self.net.forward(out_names)))
        regressors, logits = _pick_outputs(outputs, len(images))
        results = [self._image_result(regressors[i], logits[i], metas[i]) for i in range(len(images))]
        at = 0
        for request in requests:
            n = pb_utils.get_input_tensor_by_name(request, "image").as_numpy().shape[0]
            chunk = results[at : at + n]
            at += n
            responses.append(pb_utils.InferenceResponse(output_tensors=[
                pb_utils.Tensor("num_dets", np.stack([c[0] for c in chunk])),
                pb_utils.Tensor("det_boxes", np.stack([c[1] for c in chunk])),
                pb_utils.Tensor("det_scores", np.stack([c[2] for c in chunk])),
                pb_utils.Tensor("det_classes", np.stack([c[3] for c in chunk])),
                pb_utils.Tensor("det_keypoints", np.stack([c[4] for c in chunk])),
            ]))
        return responses

    def _image_result(self, regressors: np.ndarray, logits: np.ndarray,
                      meta: tuple[float, int, int, int, int]) -> tuple[np.ndarray, ...]:
        scale, left, top, w, h = meta
        boxes, scores, keypoints = decode(
            regressors, logits, self.anchors, self.score_threshold, self.iou_threshold, self.rules
        )
        # From 128x128 letterbox pixels back to the input image's pixels, clipped to it.
        boxes = (boxes - np.array([left, top, left, top], np.float32)) / scale
        boxes = np.clip(boxes, 0, np.array([w, h, w, h], np.float32))
        keypoints = (keypoints - np.array([left, top], np.float32)) / scale
        keypoints = np.clip(keypoints, 0, np.array([w, h], np.float32))
        n = len(boxes)
        out_boxes = np.zeros((MAX_DETS, 4), np.float32)
        out_scores = np.zeros((MAX_DETS,), np.float32)
        out_keypoints = np.zeros((MAX_DETS, NUM_KEYPOINTS, 3), np.float32)
        out_boxes[:n], out_scores[:n] = boxes, scores
        # BlazeFace gives no per-landmark confidence: each landmark carries its face's score.
        out_keypoints[:n, :, :2], out_keypoints[:n, :, 2] = keypoints, scores[:, None]
        return (np.array([n], np.int32), out_boxes, out_scores, np.zeros((MAX_DETS,), np.int32), out_keypoints)

    def finalize(self) -> None:
        self.net = None


def _per_image(value: np.ndarray, n: int) -> np.ndarray:
    """[n, 896, k] from OpenCV's output for a batch of n.

    The graph reshapes each anchor layer to [1, -1, k] before concatenating, so
    with n images OpenCV returns [1, 896 n, k] ordered as all images' 16x16-grid
    anchors (512 each), then all images' 8x8-grid anchors (384 each).
    """
    flat = np.asarray(value).reshape(-1, np.asarray(value).shape[-1])
    big, small = flat[: 512 * n].reshape(n, 512, -1), flat[512 * n :].reshape(n, 384, -1)
    return np.concatenate([big, small], axis=1)


def _pick_outputs(outputs: dict, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The regressors [n, 896, 16] and classificators [n, 896, 1], whatever OpenCV named them."""
    regressors = logits = None
    for value in outputs.values():
        arr = _per_image(value, n)
        if arr.shape[2] == 16:
            regressors = arr
        elif arr.shape[2] == 1:
            logits = arr
    if regressors is None or logits is None:
        raise pb_utils.TritonModelException(f"unexpected BlazeFace outputs: {[np.shape(v) for v in outputs.values()]}")
    return regressors, logits
