"""Everything between a numpy image and a list of detections (no Qt here)."""
