"""The kinds a model profile is made of: what the model does, how its outputs are laid out,
how an image is fitted to its input and where its boxes live. Profile files and config
parameters spell them as the values below; everything past the parsing compares the enums."""

from __future__ import annotations

import enum


class Task(enum.StrEnum):
    DETECT = "detect"
    POSE = "pose"  # detections with keypoints
    SEGMENT = "segment"  # detections with instance masks
    SEMANTIC = "semantic"  # a per-pixel class map
    CLASSIFY = "classify"  # top-k classes of the whole image


class OutputFormat(enum.StrEnum):
    EFFICIENTNMS = "efficientnms"  # num_dets/det_boxes/det_scores/det_classes, decoded by the model
    TFOD = "tfod"  # TF Object Detection API: normalised ymin, xmin, ymax, xmax
    YOLOV5 = "yolov5"  # raw [N, 5 + C] rows, decoded and NMS'd by the app
    YOLOV8 = "yolov8"  # raw [4 + C, N], decoded and NMS'd by the app
    SEMANTIC = "semantic"  # a map
    CLASSIFY = "classify"  # a score vector


class Preprocess(enum.StrEnum):
    LETTERBOX = "letterbox"  # keep the aspect ratio, pad (Ultralytics' convention)
    RESIZE = "resize"  # stretch to the input size
    RAW = "raw"  # the image as it is (any size)


class BoxesIn(enum.StrEnum):
    INPUT = "input"  # model-input pixels: undo the letterbox/resize
    ORIGINAL = "original"  # original-image pixels already
    NORMALIZED = "normalized"  # 0..1 of the model input


class KeypointStyle(enum.StrEnum):
    """How keypoints are drawn: a dot each (and the skeleton), or the skeleton's lines only
    with the points shown under the mouse (a face mesh's 468 points would hide the face)."""

    DOTS = "dots"
    LINES = "lines"
