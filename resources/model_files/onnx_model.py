"""A Triton Python-backend model that runs an ONNX file with onnxruntime: how the app serves a
model file on a Triton without the onnxruntime backend (the embedded server has only the Python
one). Generated models (app.inference.model_files) and `repository save --backend python` use it.

The file is `<model dir>/<version>/model.onnx`; the inputs and outputs are the config's, fed
and read by name. With max_batch_size > 0 and dynamic batching, the requests of one execution
whose inputs have the same shapes are run as one batch (concatenated along the batch axis,
the outputs split back); the others one by one.
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
        self.batching = int(config.get("max_batch_size", 0)) > 0

    def execute(self, requests: list) -> list:
        responses: list = [None] * len(requests)
        groups: dict[tuple, list[tuple[int, dict]]] = {}
        for k, request in enumerate(requests):
            try:
                feeds = {
                    name: pb_utils.get_input_tensor_by_name(request, name).as_numpy() for name in self.inputs
                }
            except Exception as exc:  # one bad request must not take the others down
                responses[k] = _error(exc)
                continue
            shapes = tuple(feeds[name].shape for name in self.inputs) if self.batching else (k,)
            groups.setdefault(shapes, []).append((k, feeds))
        for members in groups.values():
            self._run_group(members, responses)
        return responses

    def _run_group(self, members: list[tuple[int, dict]], responses: list) -> None:
        if len(members) > 1:
            try:
                joined = {n: np.concatenate([f[n] for _, f in members]) for n in self.inputs}
                results = self.session.run(self.outputs, joined)
                sizes = [len(f[self.inputs[0]]) for _, f in members]
                if all(len(r) == sum(sizes) for r in results):
                    cuts = np.cumsum(sizes)[:-1]
                    parts = [np.split(r, cuts) for r in results]
                    for j, (k, _) in enumerate(members):
                        responses[k] = self._response([p[j] for p in parts])
                    return
            except Exception:  # run them one by one: each gets its own answer
                pass
        for k, feeds in members:
            try:
                responses[k] = self._response(self.session.run(self.outputs, feeds))
            except Exception as exc:
                responses[k] = _error(exc)

    def _response(self, results: list) -> object:
        pairs = zip(self.outputs, results, strict=True)
        tensors = [pb_utils.Tensor(n, np.ascontiguousarray(r)) for n, r in pairs]
        return pb_utils.InferenceResponse(output_tensors=tensors)


def _error(exc: Exception) -> object:
    return pb_utils.InferenceResponse(error=pb_utils.TritonError(str(exc)))
