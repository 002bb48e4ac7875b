"""Batches of images: running, browsing, thumbnails, the detections list and exports."""
