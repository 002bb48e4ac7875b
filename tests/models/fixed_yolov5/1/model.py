"""Test-only model: raw YOLOv5 output with a few strong rows, the rest zero."""

import numpy as np
import triton_python_backend_utils as pb_utils

# row index: (cx, cy, w, h, objectness, class id, class score); all exact in FP16.
ROWS = {
    10: (200.0, 250.0, 200.0, 200.0, 1.0, 0, 0.875),  # box 100,150,300,350; score 0.875
    11: (204.0, 250.0, 200.0, 200.0, 1.0, 0, 0.75),  # same class, IoU ~0.96 with row 10: suppressed
    5000: (500.0, 350.0, 200.0, 300.0, 0.75, 2, 1.0),  # box 400,200,600,500; score 0.75
}


class TritonPythonModel:
    def initialize(self, args):
        pass

    def execute(self, requests):
        responses = []
        for request in requests:
            image = pb_utils.get_input_tensor_by_name(request, "images").as_numpy()
            if image.shape != (1, 3, 640, 640) or image.dtype != np.float16:
                raise pb_utils.TritonModelException(f"expected FP16 [1,3,640,640], got {image.shape}")
            out = np.zeros((1, 25200, 85), np.float16)
            for row, (cx, cy, w, h, obj, cls, score) in ROWS.items():
                out[0, row, :5] = (cx, cy, w, h, obj)
                out[0, row, 5 + cls] = score
            responses.append(pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("output0", out)]))
        return responses

    def finalize(self):
        pass
