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
    OBB = "obb"  # oriented (rotated) boxes


class OutputFormat(enum.StrEnum):
    EFFICIENTNMS = "efficientnms"  # num_dets/det_boxes/det_scores/det_classes, decoded by the model
    TFOD = "tfod"  # TF Object Detection API: normalised ymin, xmin, ymax, xmax
    YOLOV5 = "yolov5"  # raw [N, 5 + C] rows, decoded and NMS'd by the app
    YOLOV8 = "yolov8"  # raw [4 + C, N], decoded and NMS'd by the app
    END2END = "end2end"  # YOLOv10 / YOLO26 NMS-free [N, K, 6 + E]: x1 y1 x2 y2 score class ...
    YOLOX = "yolox"  # raw YOLOX grid [N, A, 5 + C]: grid + stride, exp w/h, obj x cls
    DETR = "detr"  # normalised cxcywh boxes [N, Q, 4] + class logits [N, Q, C], no NMS
    RTDETR = "rtdetr"  # Ultralytics' RT-DETR export [N, 300, 6]: normalised cxcywh, score, class
    TORCHVISION = "torchvision"  # boxes [K, 4], labels [K], scores [K]; K varies
    SCRFD = "scrfd"  # face detector: score_/bbox_/kps_ per stride 8, 16, 32
    SEMANTIC = "semantic"  # a map
    CLASSIFY = "classify"  # a score vector


class Preprocess(enum.StrEnum):
    LETTERBOX = "letterbox"  # keep the aspect ratio, pad (Ultralytics' convention)
    LETTERBOX_TOP_LEFT = "letterbox_top_left"  # YOLOX: the image top-left, padded right/bottom
    # insightface's SCRFD.detect: top-left too, sized by its own arithmetic, one scale
    # (the new height over the height) for both axes.
    LETTERBOX_INSIGHTFACE = "letterbox_insightface"
    RESIZE = "resize"  # stretch to the input size
    # Ultralytics' classify transforms: the shorter side to the input size (Pillow's bilinear),
    # then the centre crop.
    CENTER_CROP = "center_crop"
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
