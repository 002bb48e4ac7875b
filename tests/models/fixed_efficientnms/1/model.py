"""Test-only model: two fixed EfficientNMS detections per image, whatever the pixels."""

import numpy as np
import triton_python_backend_utils as pb_utils

BOXES = np.array([[100, 150, 300, 350], [400, 200, 600, 500]], np.float32)  # x1, y1, x2, y2
SCORES = np.array([0.9, 0.8], np.float32)
CLASSES = np.array([0, 2], np.int32)
K = 100


class TritonPythonModel:
    def initialize(self, args):
        pass

    def execute(self, requests):
        responses = []
        for request in requests:
            batch = pb_utils.get_input_tensor_by_name(request, "images").as_numpy().shape[0]
            num = np.full((batch, 1), len(BOXES), np.int32)
            boxes = np.zeros((batch, K, 4), np.float32)
            scores = np.zeros((batch, K), np.float32)
            classes = np.zeros((batch, K), np.int32)
            boxes[:, : len(BOXES)] = BOXES
            scores[:, : len(BOXES)] = SCORES
            classes[:, : len(BOXES)] = CLASSES
            # Rows past num_dets are garbage on purpose: the client must ignore them.
            boxes[:, len(BOXES) :] = [0, 0, 640, 640]
            scores[:, len(BOXES) :] = 0.99
            responses.append(
                pb_utils.InferenceResponse(
                    output_tensors=[
                        pb_utils.Tensor("num_dets", num),
                        pb_utils.Tensor("det_boxes", boxes),
                        pb_utils.Tensor("det_scores", scores),
                        pb_utils.Tensor("det_classes", classes),
                    ]
                )
            )
        return responses

    def finalize(self):
        pass
