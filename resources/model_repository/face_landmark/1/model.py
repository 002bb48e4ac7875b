"""MediaPipe's face landmark model on Triton's Python backend, with TensorFlow Lite.

A batch of 192x192 RGB UINT8 face crops in; per crop, 468 landmarks (x, y in crop pixels,
z) and the face's presence probability out. The crops are cut by the caller (face_mesh):
see face_mesh/1/mediapipe_rules.py for MediaPipe's rules.
"""

from __future__ import annotations

import os

import numpy as np
import triton_python_backend_utils as pb_utils
from tflite_runtime.interpreter import Interpreter

MODEL_FILE = "face_landmark.tflite"
NUM_LANDMARKS = 468


class TritonPythonModel:
    def initialize(self, args: dict) -> None:
        path = os.path.join(args["model_repository"], args["model_version"], MODEL_FILE)
        # One thread: instances and the other stages already share the cores.
        self.interpreter = Interpreter(model_path=path, num_threads=1)
        self.interpreter.allocate_tensors()
        self.input_index = self.interpreter.get_input_details()[0]["index"]
        outputs = {int(np.prod(d["shape"])): d["index"] for d in self.interpreter.get_output_details()}
        self.landmarks_index, self.presence_index = outputs[NUM_LANDMARKS * 3], outputs[1]

    def execute(self, requests: list) -> list:
        responses = []
        for request in requests:
            crops = pb_utils.get_input_tensor_by_name(request, "image").as_numpy()
            landmarks = np.zeros((len(crops), NUM_LANDMARKS, 3), np.float32)
            presence = np.zeros((len(crops), 1), np.float32)
            for i, crop in enumerate(crops):
                # As MediaPipe's ImageToTensorCalculator: values in [0, 1].
                self.interpreter.set_tensor(self.input_index, (crop.astype(np.float32) / 255.0)[None])
                self.interpreter.invoke()
                landmarks[i] = self.interpreter.get_tensor(self.landmarks_index).reshape(NUM_LANDMARKS, 3)
                logit = float(self.interpreter.get_tensor(self.presence_index).reshape(-1)[0])
                presence[i, 0] = 1.0 / (1.0 + np.exp(-logit))
            responses.append(
                pb_utils.InferenceResponse(
                    output_tensors=[pb_utils.Tensor("landmarks", landmarks), pb_utils.Tensor("presence", presence)]
                )
            )
        return responses

    def finalize(self) -> None:
        self.interpreter = None
