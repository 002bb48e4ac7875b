"""Test-only model: fixed EfficientNMS detections per image, whatever the pixels; which ones
depends on the version being served (this file is both versions' model.py)."""

import numpy as np
import triton_python_backend_utils as pb_utils

# x1, y1, x2, y2 in model-input pixels, score, class; see ../../README.md for the differences.
DETECTIONS = {
    "1": [
        ([100, 150, 300, 350], 0.9, 0),
        ([300, 300, 500, 500], 0.8, 2),
        ([50, 400, 150, 500], 0.7, 0),
    ],
    "2": [
        ([110, 150, 310, 350], 0.9, 0),  # 10 px to the right: IoU 0.905 with version 1's
        ([400, 300, 600, 500], 0.8, 2),  # 100 px to the right: IoU 0.333
        # version 1's third box is dropped
    ],
}
K = 100


class TritonPythonModel:
    def initialize(self, args):
        rows = DETECTIONS[str(args["model_version"])]
        self.boxes = np.array([r[0] for r in rows], np.float32)
        self.scores = np.array([r[1] for r in rows], np.float32)
        self.classes = np.array([r[2] for r in rows], np.int32)

    def execute(self, requests):
        responses = []
        n = len(self.boxes)
        for request in requests:
            batch = pb_utils.get_input_tensor_by_name(request, "images").as_numpy().shape[0]
            num = np.full((batch, 1), n, np.int32)
            boxes = np.zeros((batch, K, 4), np.float32)
            scores = np.zeros((batch, K), np.float32)
            classes = np.zeros((batch, K), np.int32)
            boxes[:, :n] = self.boxes
            scores[:, :n] = self.scores
            classes[:, :n] = self.classes
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
