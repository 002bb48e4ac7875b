"""A Triton Python-backend model that runs an ONNX file with onnxruntime: how the tests serve
a real export on the embedded server, which has no onnxruntime backend (only the Python one).

The file is `<model dir>/<version>/model.onnx`; the inputs and outputs are the config's, fed
and read by name. Requests run one after the other, each with its own batch (max_batch_size
> 0 and no dynamic batching: each request's tensor keeps its leading batch dim).
"""

from __future__ import annotations

import json
import os

import numpy as np
import onnxruntime
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args: dict) -> None:
        config = json.loads(args["model_config"])
        path = os.path.join(args["model_repository"], args["model_version"], "model.onnx")
        options = onnxruntime.SessionOptions()
        # The server shares its cores with its clients: one thread per instance.
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        self.session = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        self.inputs = [i.name for i in self.session.get_inputs()]
        self.outputs = [o["name"] for o in config["output"]]

    def execute(self, requests: list) -> list:
        responses = []
        for request in requests:
            try:
                feeds = {
                    name: pb_utils.get_input_tensor_by_name(request, name).as_numpy() for name in self.inputs
                }
                results = self.session.run(self.outputs, feeds)
                pairs = zip(self.outputs, results, strict=True)
                tensors = [pb_utils.Tensor(n, np.ascontiguousarray(r)) for n, r in pairs]
                responses.append(pb_utils.InferenceResponse(output_tensors=tensors))
            except Exception as exc:  # one bad request must not take the others down
                responses.append(pb_utils.InferenceResponse(error=pb_utils.TritonError(str(exc))))
        return responses
