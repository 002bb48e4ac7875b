import json
import time

import numpy as np
import triton_python_backend_utils as pb_utils

LARGEST_BATCH = 32  # the "engine's" batch profile


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        if int(config.get("max_batch_size", 0)) > LARGEST_BATCH:
            raise pb_utils.TritonModelException(
                f"fixed_cost supports at most {LARGEST_BATCH} images per batch, "
                f"not max_batch_size {config['max_batch_size']}"
            )
        parameters = config.get("parameters", {})
        self.seconds = float(parameters.get("execution_ms", {}).get("string_value", "20")) / 1000

    def execute(self, requests):
        # One fixed cost per execution, however many requests (and images) it carries.
        time.sleep(self.seconds)
        responses = []
        for request in requests:
            batch = pb_utils.get_input_tensor_by_name(request, "image").as_numpy()
            n, h, w = batch.shape[0], batch.shape[1], batch.shape[2]
            boxes = np.zeros((n, 100, 4), np.float32)
            boxes[:, 0] = [w / 4, h / 4, 3 * w / 4, 3 * h / 4]
            scores = np.zeros((n, 100), np.float32)
            scores[:, 0] = 0.9
            responses.append(
                pb_utils.InferenceResponse(
                    output_tensors=[
                        pb_utils.Tensor("num_dets", np.ones((n, 1), np.int32)),
                        pb_utils.Tensor("det_boxes", boxes),
                        pb_utils.Tensor("det_scores", scores),
                        pb_utils.Tensor("det_classes", np.zeros((n, 100), np.int32)),
                    ]
                )
            )
        return responses
