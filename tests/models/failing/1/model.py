import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [
            pb_utils.InferenceResponse(
                error=pb_utils.TritonError("test model failure: inference always fails")
            )
            for _ in requests
        ]
