"""Test-only model: fixed class scores over a 120x160 grid (each cell 4x4 input pixels).

Cell (row i, column j): sky for i < 40, road for i >= 90, car inside the disk
(j + 0.5 - 100)^2 + (i + 0.5 - 80)^2 < 20^2 (over the road: car scores higher),
background elsewhere.
"""

import numpy as np
import triton_python_backend_utils as pb_utils


def scores():
    i, j = np.meshgrid(np.arange(120), np.arange(160), indexing="ij")
    out = np.zeros((4, 120, 160), np.float32)
    out[0] = 1.0
    out[1][i < 40] = 5.0
    out[2][i >= 90] = 5.0
    out[3][(j + 0.5 - 100) ** 2 + (i + 0.5 - 80) ** 2 < 20**2] = 6.0
    return out


class TritonPythonModel:
    def initialize(self, args):
        self.scores = scores()

    def execute(self, requests):
        responses = []
        for request in requests:
            batch = pb_utils.get_input_tensor_by_name(request, "input").as_numpy().shape[0]
            out = np.repeat(self.scores[None], batch, axis=0)
            responses.append(pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("scores", out)]))
        return responses

    def finalize(self):
        pass
