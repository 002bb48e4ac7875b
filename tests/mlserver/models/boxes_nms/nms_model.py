"""Test-only MLServer model in the EfficientNMS layout (see ../../README.md): fixed boxes in
model-input pixels whatever the pixels, rows past num_dets filled with garbage on purpose."""

import numpy as np
from mlserver import MLModel
from mlserver.codecs import NumpyCodec
from mlserver.types import InferenceRequest, InferenceResponse

K = 100
# x1, y1, x2, y2 in the 128x128 model input, score, class.
DETECTIONS = [([20, 30, 60, 70], 0.9, 0), ([80, 40, 120, 100], 0.8, 2)]


class BoxesNms(MLModel):
    async def load(self) -> bool:
        return True

    async def predict(self, payload: InferenceRequest) -> InferenceResponse:
        images = NumpyCodec.decode_input(payload.inputs[0])
        if images.ndim != 4 or images.shape[1:] != (3, 128, 128):
            raise ValueError(f"expected [N, 3, 128, 128], got {list(images.shape)}")
        batch, n = images.shape[0], len(DETECTIONS)
        boxes = np.zeros((batch, K, 4), np.float32)
        scores = np.zeros((batch, K), np.float32)
        classes = np.zeros((batch, K), np.int32)
        boxes[:, :n] = [d[0] for d in DETECTIONS]
        scores[:, :n] = [d[1] for d in DETECTIONS]
        classes[:, :n] = [d[2] for d in DETECTIONS]
        boxes[:, n:] = [0, 0, 128, 128]  # past num_dets: a client that reads them fails the test
        scores[:, n:] = 0.99
        return InferenceResponse(
            model_name=self.name,
            outputs=[
                NumpyCodec.encode_output("num_dets", np.full((batch, 1), n, np.int32)),
                NumpyCodec.encode_output("det_boxes", boxes),
                NumpyCodec.encode_output("det_scores", scores),
                NumpyCodec.encode_output("det_classes", classes),
            ],
        )
