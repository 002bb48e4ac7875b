"""Triton Inference Viewer: live detections and request statistics for NVIDIA Triton."""

__version__ = "0.1.0"
