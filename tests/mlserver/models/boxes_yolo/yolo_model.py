"""Test-only MLServer model with a raw YOLOv8-style output `[4 + C, N]` (see ../../README.md),
told apart by its shape alone (MLServer has no model configuration): fixed columns whatever
the pixels, one of them a near-duplicate that non-maximum suppression must remove."""

import numpy as np
from mlserver import MLModel
from mlserver.codecs import NumpyCodec
from mlserver.types import InferenceRequest, InferenceResponse

CLASSES = 2
ANCHORS = 16 * 16 + 8 * 8 + 4 * 4  # a 128x128 input at strides 8, 16 and 32: 336
# column: (cx, cy, w, h), class, score
COLUMNS = [
    (10, (40, 50, 40, 40), 0, 0.9),  # box [20, 30, 60, 70]
    (11, (42, 50, 40, 40), 0, 0.6),  # 2 px right: removed by NMS
    (300, (100, 70, 40, 60), 1, 0.8),  # box [80, 40, 120, 100]
]


class BoxesYolo(MLModel):
    async def load(self) -> bool:
        return True

    async def predict(self, payload: InferenceRequest) -> InferenceResponse:
        images = NumpyCodec.decode_input(payload.inputs[0])
        if images.ndim != 4 or images.shape[1:] != (3, 128, 128):
            raise ValueError(f"expected [N, 3, 128, 128], got {list(images.shape)}")
        out = np.zeros((images.shape[0], 4 + CLASSES, ANCHORS), np.float32)
        for column, box, cls, score in COLUMNS:
            out[:, :4, column] = box
            out[:, 4 + cls, column] = score
        return InferenceResponse(model_name=self.name, outputs=[NumpyCodec.encode_output("output0", out)])
