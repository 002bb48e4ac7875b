"""Test-only model: a YOLOv5-style [10, 7] output (2 classes) the app cannot recognise alone."""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            batch = pb_utils.get_input_tensor_by_name(request, "image").as_numpy()
            n, h, w = batch.shape[0], batch.shape[1], batch.shape[2]
            out = np.zeros((n, 10, 7), np.float32)
            out[:, 0] = (w / 2, h / 2, w / 2, h / 2, 0.9, 0.1, 0.95)  # cx, cy, w, h, obj, c0, c1
            responses.append(pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("output", out)]))
        return responses
