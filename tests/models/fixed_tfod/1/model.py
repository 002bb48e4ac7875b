"""Test-only model: two fixed TF OD detections (normalised ymin, xmin, ymax, xmax)."""

import numpy as np
import triton_python_backend_utils as pb_utils

BOXES = np.array([[0.1, 0.2, 0.5, 0.6], [0.25, 0.5, 0.75, 1.0]], np.float32)
SCORES = np.array([0.95, 0.7], np.float32)
CLASSES = np.array([1.0, 3.0], np.float32)  # TF OD ids are 1-based
K = 100


class TritonPythonModel:
    def initialize(self, args):
        pass

    def execute(self, requests):
        responses = []
        for request in requests:
            image = pb_utils.get_input_tensor_by_name(request, "input_tensor").as_numpy()
            if image.ndim != 4 or image.shape[0] != 1 or image.shape[3] != 3:
                raise pb_utils.TritonModelException(f"expected [1, H, W, 3], got {image.shape}")
            boxes = np.zeros((1, K, 4), np.float32)
            scores = np.zeros((1, K), np.float32)
            classes = np.zeros((1, K), np.float32)
            boxes[0, : len(BOXES)] = BOXES
            scores[0, : len(BOXES)] = SCORES
            classes[0, : len(BOXES)] = CLASSES
            responses.append(
                pb_utils.InferenceResponse(
                    output_tensors=[
                        pb_utils.Tensor("num_detections", np.array([len(BOXES)], np.float32)),
                        pb_utils.Tensor("detection_boxes", boxes),
                        pb_utils.Tensor("detection_scores", scores),
                        pb_utils.Tensor("detection_classes", classes),
                    ]
                )
            )
        return responses

    def finalize(self):
        pass
