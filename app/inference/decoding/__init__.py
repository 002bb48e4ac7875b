"""Output tensors -> boxes, masks, keypoints and classes: decoders, NMS, geometry, labels (no Qt)."""
