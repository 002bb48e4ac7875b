"""Results as annotation-file content (COCO, labelme, YOLO): pure functions, no Qt, no I/O."""
