"""Model files (.onnx, .tflite) served by Triton: read, configured, uploaded."""
