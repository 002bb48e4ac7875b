"""Test-only model: raw YOLOv8 pose output with three strong columns, the rest zero."""

import numpy as np
import triton_python_backend_utils as pb_utils

K = 17


def keypoints(x0, y0, dx, dy, vis):
    return [(x0 + dx * j, y0 + dy * j, vis(j)) for j in range(K)]


# column: (cx, cy, w, h, score, keypoints in model-input pixels (x, y, visibility))
KPTS_100 = keypoints(110.0, 155.0, 10.0, 10.0, lambda j: 0.9 if j % 2 == 0 else 0.2)
KPTS_100[16] = (150.0, 20.0, 0.9)  # above the picture for wide images: clipped to its top edge
COLUMNS = {
    100: (200.0, 250.0, 200.0, 200.0, 0.9, KPTS_100),
    101: (204.0, 250.0, 200.0, 200.0, 0.7, keypoints(600.0, 600.0, 0.0, 0.0, lambda j: 1.0)),  # NMS'd
    8000: (500.0, 350.0, 200.0, 300.0, 0.8, keypoints(410.0, 210.0, 10.0, 15.0, lambda j: 0.95)),
}


class TritonPythonModel:
    def initialize(self, args):
        out = np.zeros((56, 8400), np.float32)
        for col, (cx, cy, w, h, score, kpts) in COLUMNS.items():
            out[:5, col] = (cx, cy, w, h, score)
            out[5:, col] = np.asarray(kpts, np.float32).reshape(-1)
        self.out = out

    def execute(self, requests):
        responses = []
        for request in requests:
            batch = pb_utils.get_input_tensor_by_name(request, "images").as_numpy().shape[0]
            out = np.repeat(self.out[None], batch, axis=0)
            responses.append(pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("output0", out)]))
        return responses

    def finalize(self):
        pass
