"""The one test-only model behind every fixed-output model of this folder (see README.md).

Each model's `1/model.py` is a link to this file; its config.pbtxt chooses what it answers
with the parameter `fixed_outputs` (one of LAYOUTS below). The outputs never depend on the
pixels (except fixed_classify's channel means), so a test knows the exact boxes, keypoints,
masks or classes the app must report. The input is named by the config's first input;
`model_version` picks the detections of fixed_versions.
"""

import json

import numpy as np
import triton_python_backend_utils as pb_utils

K = 100  # rows of the EfficientNMS and TF OD outputs

# -- EfficientNMS (fixed_efficientnms, fixed_versions) -------------------------------------------
# x1, y1, x2, y2 in model-input pixels, score, class.
EFFICIENTNMS = [([100, 150, 300, 350], 0.9, 0), ([400, 200, 600, 500], 0.8, 2)]
BY_VERSION = {  # fixed_versions: the planted differences of an A/B compare
    "1": [
        ([100, 150, 300, 350], 0.9, 0),
        ([300, 300, 500, 500], 0.8, 2),
        ([50, 400, 150, 500], 0.7, 0),
    ],
    "2": [
        ([110, 150, 310, 350], 0.9, 0),  # 10 px to the right: IoU 0.905 with version 1's
        ([400, 300, 600, 500], 0.8, 2),  # 100 px to the right: IoU 0.333
        # version 1's third box is dropped
    ],
}


def efficientnms(rows):
    boxes_in = np.array([r[0] for r in rows], np.float32)
    n = len(rows)

    def outputs(images):
        batch = images.shape[0]
        boxes = np.zeros((batch, K, 4), np.float32)
        scores = np.zeros((batch, K), np.float32)
        classes = np.zeros((batch, K), np.int32)
        boxes[:, :n] = boxes_in
        scores[:, :n] = [r[1] for r in rows]
        classes[:, :n] = [r[2] for r in rows]
        # Rows past num_dets are garbage on purpose: the client must ignore them.
        boxes[:, n:] = [0, 0, 640, 640]
        scores[:, n:] = 0.99
        return {
            "num_dets": np.full((batch, 1), n, np.int32),
            "det_boxes": boxes,
            "det_scores": scores,
            "det_classes": classes,
        }

    return outputs


# -- TF Object Detection API (fixed_tfod): normalised ymin, xmin, ymax, xmax; 1-based ids --------
TFOD = [([0.1, 0.2, 0.5, 0.6], 0.95, 1.0), ([0.25, 0.5, 0.75, 1.0], 0.7, 3.0)]


def tfod(_version):
    def outputs(image):
        if image.ndim != 4 or image.shape[0] != 1 or image.shape[3] != 3:
            raise ValueError(f"expected [1, H, W, 3], got {image.shape}")
        boxes = np.zeros((1, K, 4), np.float32)
        scores = np.zeros((1, K), np.float32)
        classes = np.zeros((1, K), np.float32)
        for i, (box, score, cls) in enumerate(TFOD):
            boxes[0, i], scores[0, i], classes[0, i] = box, score, cls
        return {
            "num_detections": np.array([len(TFOD)], np.float32),
            "detection_boxes": boxes,
            "detection_scores": scores,
            "detection_classes": classes,
        }

    return outputs


# -- raw YOLOv5 rows (fixed_yolov5): [1, 25200, 85] FP16 -----------------------------------------
# row index: (cx, cy, w, h, objectness, class id, class score); all exact in FP16.
YOLOV5_ROWS = {
    10: (200.0, 250.0, 200.0, 200.0, 1.0, 0, 0.875),  # box 100,150,300,350; score 0.875
    11: (204.0, 250.0, 200.0, 200.0, 1.0, 0, 0.75),  # same class, IoU ~0.96 with row 10: suppressed
    5000: (500.0, 350.0, 200.0, 300.0, 0.75, 2, 1.0),  # box 400,200,600,500; score 0.75
}


def yolov5(_version):
    out = np.zeros((1, 25200, 85), np.float16)
    for row, (cx, cy, w, h, obj, cls, score) in YOLOV5_ROWS.items():
        out[0, row, :5] = (cx, cy, w, h, obj)
        out[0, row, 5 + cls] = score

    def outputs(image):
        if image.shape != (1, 3, 640, 640) or image.dtype != np.float16:
            raise ValueError(f"expected FP16 [1,3,640,640], got {image.shape}")
        return {"output0": out}

    return outputs


# -- raw YOLOv8 columns (fixed_yolov8): [84, 8400] per image -------------------------------------
# column index: (cx, cy, w, h, class id, class score)
YOLOV8_COLUMNS = {
    100: (200.0, 250.0, 200.0, 200.0, 0, 0.9),  # box 100,150,300,350 person
    8000: (500.0, 350.0, 200.0, 300.0, 2, 0.8),  # box 400,200,600,500 car
}


def yolov8(_version):
    out = np.zeros((84, 8400), np.float32)
    for col, (cx, cy, w, h, cls, score) in YOLOV8_COLUMNS.items():
        out[:4, col] = (cx, cy, w, h)
        out[4 + cls, col] = score
    return per_image(out)


# -- YOLOv8 pose (fixed_pose): [56, 8400] per image = 4 + 1 class + 17 x (x, y, visibility) ------
def keypoints(x0, y0, dx, dy, vis):
    return [(x0 + dx * j, y0 + dy * j, vis(j)) for j in range(17)]


KPTS_100 = keypoints(110.0, 155.0, 10.0, 10.0, lambda j: 0.9 if j % 2 == 0 else 0.2)
KPTS_100[16] = (150.0, 20.0, 0.9)  # above the picture for wide images: clipped to its top edge
# column: (cx, cy, w, h, score, keypoints in model-input pixels (x, y, visibility))
POSE_COLUMNS = {
    100: (200.0, 250.0, 200.0, 200.0, 0.9, KPTS_100),
    101: (204.0, 250.0, 200.0, 200.0, 0.7, keypoints(600.0, 600.0, 0.0, 0.0, lambda j: 1.0)),  # NMS'd
    8000: (500.0, 350.0, 200.0, 300.0, 0.8, keypoints(410.0, 210.0, 10.0, 15.0, lambda j: 0.95)),
}


def pose(_version):
    out = np.zeros((56, 8400), np.float32)
    for col, (cx, cy, w, h, score, kpts) in POSE_COLUMNS.items():
        out[:5, col] = (cx, cy, w, h, score)
        out[5:, col] = np.asarray(kpts, np.float32).reshape(-1)
    return per_image(out)


# -- YOLOv8-seg (fixed_segment): [1, 38, 8400] = 4 + 2 classes + 32 coefficients, prototypes -----
# Prototype 0 is positive inside a disk (centre 230, 250, radius 90 in model-input pixels),
# prototype 1 inside the rectangle x 380..560, y 260..460; each is a signed distance (input
# pixels) sampled at the 4x4-pixel cells' centres, so the mask edge interpolates exactly.
NM = 32
# column: (cx, cy, w, h, class id, score, prototype whose coefficient is 1)
SEGMENT_COLUMNS = {
    200: (200.0, 250.0, 200.0, 200.0, 0, 0.9, 0),  # box 100,150,300,350: the disk, cut at x = 300
    201: (204.0, 250.0, 200.0, 200.0, 0, 0.6, 1),  # removed by NMS (its mask would be the square)
    7000: (500.0, 350.0, 200.0, 300.0, 1, 0.8, 1),  # box 400,200,600,500: the rectangle, cut at x = 400
}


def segment(_version):
    centres = (np.arange(160, dtype=np.float32) + 0.5) * 4.0  # cell centres, input pixels
    y, x = np.meshgrid(centres, centres, indexing="ij")
    protos = np.zeros((1, NM, 160, 160), np.float32)
    protos[0, 0] = 90.0 - np.hypot(x - 230.0, y - 250.0)
    protos[0, 1] = np.minimum.reduce([x - 380.0, 560.0 - x, y - 260.0, 460.0 - y])
    out = np.zeros((1, 4 + 2 + NM, 8400), np.float32)
    for col, (cx, cy, w, h, cls, score, proto) in SEGMENT_COLUMNS.items():
        out[0, :4, col] = (cx, cy, w, h)
        out[0, 4 + cls, col] = score
        out[0, 6 + proto, col] = 1.0
    return lambda _images: {"output0": out, "output1": protos}


# -- semantic segmentation (fixed_semantic): scores [4, 120, 160] per image ----------------------
# Cell (row i, column j): sky for i < 40, road for i >= 90, car inside the disk
# (j + 0.5 - 100)^2 + (i + 0.5 - 80)^2 < 20^2 (over the road: car scores higher), background
# elsewhere. Each cell covers 4x4 input pixels.
def semantic(_version):
    i, j = np.meshgrid(np.arange(120), np.arange(160), indexing="ij")
    scores = np.zeros((4, 120, 160), np.float32)
    scores[0] = 1.0
    scores[1][i < 40] = 5.0
    scores[2][i >= 90] = 5.0
    scores[3][(j + 0.5 - 100) ** 2 + (i + 0.5 - 80) ** 2 < 20**2] = 6.0
    return per_image(scores, "scores")


# -- classifier (fixed_classify): logits [6] per image -------------------------------------------
def classify(_version):
    """[10 x mean(channel 0), 10 x mean(channel 1), 10 x mean(channel 2), 3, 1, -2]: a client
    sending BGR instead of RGB gets another top class."""

    def outputs(images):
        means = images.reshape(images.shape[0], 3, -1).mean(axis=2) * 10.0
        fixed = np.tile(np.array([[3.0, 1.0, -2.0]], np.float32), (images.shape[0], 1))
        return {"logits": np.concatenate([means.astype(np.float32), fixed], axis=1)}

    return outputs


# -- unknown_layout: a YOLOv5-style [10, 7] output (2 classes) no detector recognises alone -----
def unknown(_version):
    def outputs(images):
        n, h, w = images.shape[0], images.shape[1], images.shape[2]
        out = np.zeros((n, 10, 7), np.float32)
        out[:, 0] = (w / 2, h / 2, w / 2, h / 2, 0.9, 0.1, 0.95)  # cx, cy, w, h, obj, c0, c1
        return {"output": out}

    return outputs


# -- misbehaving: answers chosen by the first image's top-left red value (see README.md) ---------
# A raw-image detector (EfficientNMS outputs, boxes in image pixels) that answers right for
# mode 0 and wrongly on purpose otherwise: the client must fail those, never report them ok.
MISSING_BOXES, WRONG_DTYPE, WRONG_SHAPE, NON_FINITE, CLASS_IDS, HUGE, FINE_SCORES = 1, 2, 3, 4, 5, 6, 7


def misbehaving(_version):
    def outputs(images):
        batch, h, w = images.shape[0], images.shape[1], images.shape[2]
        mode = int(images[0, 0, 0, 0])
        rows = [([w / 4, h / 4, 3 * w / 4, 3 * h / 4], 0.9, 0)]  # the middle half
        inf, nan = float("inf"), float("nan")
        if mode == NON_FINITE:
            rows += [
                ([inf, 0, 10, 10], 0.9, 0),
                ([0, 0, nan, 10], 0.9, 0),
                ([-inf, -inf, inf, inf], 0.9, 0),  # would become a full-image box if clipped
                ([50, 50, 10, 10], 0.9, 0),  # inverted
                ([1, 1, 20, 20], nan, 0),
                ([2, 2, 30, 30], inf, 0),
            ]
        elif mode == CLASS_IDS:
            rows += [([1, 1, 20, 20], 0.8, 5), ([2, 2, 30, 30], 0.7, -7)]
        boxes = np.zeros((batch, K, 4), np.float32)
        scores = np.zeros((batch, K), np.float32)
        classes = np.zeros((batch, K), np.int32)
        for i, (box, score, cls) in enumerate(rows):
            boxes[:, i], scores[:, i], classes[:, i] = box, score, cls
        out = {
            "num_dets": np.full((batch, 1), len(rows), np.int32),
            "det_boxes": boxes,
            "det_scores": scores,
            "det_classes": classes,
        }
        if mode == MISSING_BOXES:
            del out["det_boxes"]
        elif mode == WRONG_DTYPE:
            out["det_scores"] = scores.astype(np.float64)
        elif mode == WRONG_SHAPE:
            out["det_boxes"] = boxes[:, :50]
        elif mode == HUGE:
            out["det_boxes"] = np.zeros((batch, 300_000, 4), np.float32)  # 4.8 MB per image
        elif mode == FINE_SCORES:  # right, scored 0.9497 + (green - 128) / 100000 per image
            scores[:, 0] = 0.9497 + (images[:, 0, 0, 1].astype(np.float32) - 128) * np.float32(1e-5)
        return out

    return outputs


# -- the official RT-DETR / D-FINE / DEIM export (fixed_dfine): `images` + `orig_target_sizes` --------
# The decoder's raw queries, normalised cx, cy, w, h and per-class logits (80 classes), put
# through the exporters' own deploy post-processor (RTDETRPostProcessor / D-FINE's
# PostProcessor with use_focal_loss): sigmoid, top 300 over queries x classes, boxes
# cxcywh -> xyxy times each image's orig_target_sizes (width, height).
DFINE_CLASSES, DFINE_QUERIES = 80, 300
DFINE = [((0.25, 0.30, 0.20, 0.20), 2.0, 0), ((0.60, 0.55, 0.30, 0.50), 1.0, 2)]  # (cxcywh, logit, class)


def dfine(_version):
    logits = np.full((DFINE_QUERIES, DFINE_CLASSES), -6.0, np.float32)
    boxes = np.tile(np.float32([0.5, 0.5, 0.1, 0.1]), (DFINE_QUERIES, 1))
    for q, (box, logit, cls) in enumerate(DFINE):
        boxes[q], logits[q, cls] = box, logit

    def outputs(images, sizes):
        batch = images.shape[0]
        if sizes.shape != (batch, 2) or sizes.dtype != np.int64:
            raise ValueError(
                f"orig_target_sizes: expected INT64 [{batch}, 2], got {sizes.dtype} {list(sizes.shape)}"
            )
        cx, cy, w, h = boxes.T
        xyxy = np.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], axis=1)
        scores = 1 / (1 + np.exp(-logits.reshape(-1)))
        top = np.argsort(-scores, kind="stable")[:DFINE_QUERIES]
        out_boxes = np.stack([xyxy[top // DFINE_CLASSES] * np.tile(s, 2) for s in sizes.astype(np.float32)])
        return {
            "labels": np.tile((top % DFINE_CLASSES).astype(np.int64), (batch, 1)),
            "boxes": out_boxes.astype(np.float32),
            "scores": np.tile(scores[top].astype(np.float32), (batch, 1)),
        }

    return outputs


def per_image(one, name="output0"):
    """The same output for every image of a batch (Triton batches these models)."""
    return lambda images: {name: np.repeat(one[None], images.shape[0], axis=0)}


LAYOUTS = {
    "efficientnms": lambda _version: efficientnms(EFFICIENTNMS),
    "efficientnms_by_version": lambda version: efficientnms(BY_VERSION[version]),
    "tfod": tfod,
    "yolov5": yolov5,
    "yolov8": yolov8,
    "pose": pose,
    "segment": segment,
    "semantic": semantic,
    "classify": classify,
    "unknown": unknown,
    "misbehaving": misbehaving,
    "dfine": dfine,
}


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        layout = config["parameters"]["fixed_outputs"]["string_value"]
        self.input_name = config["input"][0]["name"]
        self.other_inputs = [i["name"] for i in config["input"][1:]]  # fixed_dfine's sizes
        self.outputs = LAYOUTS[layout](str(args["model_version"]))

    def execute(self, requests):
        responses = []
        for request in requests:
            images = pb_utils.get_input_tensor_by_name(request, self.input_name).as_numpy()
            others = [pb_utils.get_input_tensor_by_name(request, n).as_numpy() for n in self.other_inputs]
            try:
                outputs = self.outputs(images, *others)
            except ValueError as e:
                responses.append(
                    pb_utils.InferenceResponse(output_tensors=[], error=pb_utils.TritonError(str(e)))
                )
                continue
            tensors = [pb_utils.Tensor(name, value) for name, value in outputs.items()]
            responses.append(pb_utils.InferenceResponse(output_tensors=tensors))
        return responses

    def finalize(self):
        pass
