"""Test-only model: raw YOLOv8-seg output with fixed detections and prototypes.

Prototype 0 is positive inside a disk (centre 230, 250, radius 90 in model-input pixels),
prototype 1 inside the rectangle x 380..560, y 260..460; each is a signed distance (input
pixels) sampled at the 4x4-pixel cells' centres, so the mask edge interpolates exactly.
"""

import numpy as np
import triton_python_backend_utils as pb_utils

NM = 32
# column: (cx, cy, w, h, class id, score, prototype whose coefficient is 1)
COLUMNS = {
    200: (200.0, 250.0, 200.0, 200.0, 0, 0.9, 0),  # box 100,150,300,350: the disk, cut at x = 300
    201: (204.0, 250.0, 200.0, 200.0, 0, 0.6, 1),  # removed by NMS (its mask would be the square)
    7000: (500.0, 350.0, 200.0, 300.0, 1, 0.8, 1),  # box 400,200,600,500: the rectangle, cut at x = 400
}


def prototypes():
    centres = (np.arange(160, dtype=np.float32) + 0.5) * 4.0  # cell centres, input pixels
    y, x = np.meshgrid(centres, centres, indexing="ij")
    protos = np.zeros((NM, 160, 160), np.float32)
    protos[0] = 90.0 - np.hypot(x - 230.0, y - 250.0)
    protos[1] = np.minimum.reduce([x - 380.0, 560.0 - x, y - 260.0, 460.0 - y])
    return protos


class TritonPythonModel:
    def initialize(self, args):
        out = np.zeros((1, 4 + 2 + NM, 8400), np.float32)
        for col, (cx, cy, w, h, cls, score, proto) in COLUMNS.items():
            out[0, :4, col] = (cx, cy, w, h)
            out[0, 4 + cls, col] = score
            out[0, 6 + proto, col] = 1.0
        self.out, self.protos = out, prototypes()[None]

    def execute(self, requests):
        return [
            pb_utils.InferenceResponse(
                output_tensors=[pb_utils.Tensor("output0", self.out), pb_utils.Tensor("output1", self.protos)]
            )
            for _ in requests
        ]

    def finalize(self):
        pass
