"""Test-only model: raw YOLOv8 output with two strong columns, the rest zero."""

import numpy as np
import triton_python_backend_utils as pb_utils

# column index: (cx, cy, w, h, class id, class score)
COLUMNS = {
    100: (200.0, 250.0, 200.0, 200.0, 0, 0.9),  # box 100,150,300,350 person
    8000: (500.0, 350.0, 200.0, 300.0, 2, 0.8),  # box 400,200,600,500 car
}


class TritonPythonModel:
    def initialize(self, args):
        pass

    def execute(self, requests):
        responses = []
        for request in requests:
            batch = pb_utils.get_input_tensor_by_name(request, "images").as_numpy().shape[0]
            out = np.zeros((batch, 84, 8400), np.float32)
            for col, (cx, cy, w, h, cls, score) in COLUMNS.items():
                out[:, :4, col] = (cx, cy, w, h)
                out[:, 4 + cls, col] = score
            responses.append(pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("output0", out)]))
        return responses

    def finalize(self):
        pass
