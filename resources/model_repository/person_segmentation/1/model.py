"""MediaPipe selfie segmentation on Triton's Python backend, with OpenCV's DNN module.

Takes a raw RGB image of any size, stretches it to 256x256 (as MediaPipe does: no
letterbox), and answers with the model's own output: the probability (already a
sigmoid) that each of the 256x256 cells belongs to a person, covering the whole input
image. The client resizes it back to the image and thresholds it.
"""

from __future__ import annotations

import os

import cv2
import numpy as np
import triton_python_backend_utils as pb_utils

INPUT_SIZE = 256
MODEL_FILE = "selfie_segmentation.tflite"


class TritonPythonModel:
    def initialize(self, args: dict) -> None:
        # One OpenCV thread per instance: the server's other models run in parallel.
        cv2.setNumThreads(1)
        path = os.path.join(args["model_repository"], args["model_version"], MODEL_FILE)
        self.net = cv2.dnn.readNetFromTFLite(path)

    def execute(self, requests: list) -> list:
        images, counts = [], []
        for request in requests:
            batch = pb_utils.get_input_tensor_by_name(request, "image").as_numpy()
            counts.append(len(batch))
            for image in batch:
                interpolation = cv2.INTER_AREA if min(image.shape[:2]) > INPUT_SIZE else cv2.INTER_LINEAR
                images.append(cv2.resize(np.ascontiguousarray(image), (INPUT_SIZE, INPUT_SIZE),
                                         interpolation=interpolation))
        # One forward pass for every image of every request Triton batched together.
        blob = (np.stack(images).astype(np.float32) / 255.0).transpose(0, 3, 1, 2)
        self.net.setInput(np.ascontiguousarray(blob))
        probability = np.asarray(self.net.forward(), np.float32).reshape(len(images), 1, INPUT_SIZE, INPUT_SIZE)
        responses, at = [], 0
        for n in counts:
            out = np.ascontiguousarray(probability[at : at + n])
            at += n
            responses.append(pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("person_probability", out)]))
        return responses

    def finalize(self) -> None:
        self.net = None
