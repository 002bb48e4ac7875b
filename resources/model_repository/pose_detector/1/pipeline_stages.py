"""What the detector-style models of this repository (face_mesh, person_pose, pose_detector)
share on Triton's Python backend: calling a stage model through BLS, and answering in the
EfficientNMS layout with keypoints. Each of those models
carries an identical copy beside its model.py (so each model folder deploys alone;
tests/unit/test_bundled_helpers.py keeps the copies equal: edit one, copy it to the others)."""

from __future__ import annotations

import json
from collections.abc import Callable

import numpy as np
import triton_python_backend_utils as pb_utils


def pipeline_settings(args: dict) -> tuple[dict[str, str], int, float]:
    """From the model's config: its string parameters, the detection slots of its
    det_keypoints output, and the presence a landmark crop needs (0.5 unless configured)."""
    config = json.loads(args["model_config"])
    params = {k: v["string_value"] for k, v in config.get("parameters", {}).items()}
    slots = next(int(o["dims"][0]) for o in config["output"] if o["name"] == "det_keypoints")
    return params, slots, float(params.get("presence_threshold", 0.5))


class StageError(Exception):
    """A stage model failed (not loaded, bad input...): the message names it."""


def call_stage(
    model: str, inputs: dict[str, np.ndarray], outputs: list[str], trace: object = None
) -> dict[str, np.ndarray]:
    """One synchronous request to `model` (BLS); its outputs by name. `trace`: the pipeline's
    request's trace (`request.trace()`): when that request is traced, the stage's request is
    traced too, as its child (Triton writes the parent's id with it), so the stages appear
    nested under the pipeline's compute."""
    extra = {} if trace is None else {"trace": trace}
    request = pb_utils.InferenceRequest(
        model_name=model,
        inputs=[pb_utils.Tensor(name, np.ascontiguousarray(value)) for name, value in inputs.items()],
        requested_output_names=outputs,
        **extra,
    )
    response = request.exec()
    if response.has_error():
        raise StageError(f"stage model '{model}' failed: {response.error().message()}")
    return {name: pb_utils.get_output_tensor_by_name(response, name).as_numpy() for name in outputs}


def call_in_batches(
    model: str, crops: np.ndarray, outputs: list[str], max_batch: int, trace: object = None
) -> dict[str, np.ndarray]:
    """`call_stage` on an "image" batch of any length, `max_batch` crops per request."""
    parts = [
        call_stage(model, {"image": crops[i : i + max_batch]}, outputs, trace)
        for i in range(0, len(crops), max_batch)
    ]
    return {name: np.concatenate([p[name] for p in parts]) for name in outputs}


def keypoint_box(points: np.ndarray, width: int, height: int) -> np.ndarray:
    """x1, y1, x2, y2 around (K, 2) points, clipped to the image."""
    low, high = points.min(axis=0), points.max(axis=0)
    return np.clip(np.array([low[0], low[1], high[0], high[1]], np.float32), 0, [width, height, width, height])


def detections_response(per_image: list[list[tuple]], slots: int, num_keypoints: int) -> object:
    """The EfficientNMS outputs plus det_keypoints [slots, K, 3] of a batch: per image, a list
    of (box, score, keypoints (K, 3)) found."""
    n = len(per_image)
    num = np.zeros((n, 1), np.int32)
    boxes = np.zeros((n, slots, 4), np.float32)
    scores = np.zeros((n, slots), np.float32)
    keypoints = np.zeros((n, slots, num_keypoints, 3), np.float32)
    for i, found in enumerate(per_image):
        num[i, 0] = min(len(found), slots)
        for j, (box, score, points) in enumerate(found[:slots]):
            boxes[i, j], scores[i, j], keypoints[i, j] = box, score, points
    return pb_utils.InferenceResponse(
        output_tensors=[
            pb_utils.Tensor("num_dets", num),
            pb_utils.Tensor("det_boxes", boxes),
            pb_utils.Tensor("det_scores", scores),
            pb_utils.Tensor("det_classes", np.zeros((n, slots), np.int32)),
            pb_utils.Tensor("det_keypoints", keypoints),
        ]
    )


def answer(
    requests: list, per_image: Callable[[np.ndarray, object], list[tuple]], slots: int, num_keypoints: int
) -> list:
    """The responses of a batch of requests of "image" tensors: `per_image` (image, the
    request's trace -> [(box, score, keypoints)]) on every image; a failed stage fails its
    request, naming the stage."""
    responses = []
    for request in requests:
        images = pb_utils.get_input_tensor_by_name(request, "image").as_numpy()
        trace = request.trace()
        try:
            found = [per_image(np.ascontiguousarray(image), trace) for image in images]
        except StageError as exc:
            responses.append(pb_utils.InferenceResponse(error=pb_utils.TritonError(str(exc))))
            continue
        responses.append(detections_response(found, slots, num_keypoints))
    return responses
