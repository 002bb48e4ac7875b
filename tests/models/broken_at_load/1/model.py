import triton_python_backend_utils as pb_utils  # noqa: F401


class TritonPythonModel:
    def initialize(self, args):
        raise RuntimeError("this test model refuses to load (weights file missing)")

    def execute(self, requests):
        return []
