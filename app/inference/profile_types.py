"""`ModelProfile`: everything needed to turn an image into a model's input and its outputs into boxes."""

from __future__ import annotations

from dataclasses import dataclass

LAYOUTS = ("NCHW", "NHWC")
DTYPES = ("FP32", "FP16", "UINT8")
PREPROCESS = ("letterbox", "resize", "raw")
CHANNEL_ORDERS = ("RGB", "BGR")
OUTPUT_FORMATS = ("efficientnms", "tfod", "yolov5", "yolov8")
BOXES_IN = ("input", "original", "normalized")
# Number of output tensors each format reads, in this order.
OUTPUT_ROLES = {
    "efficientnms": ("num_dets", "det_boxes", "det_scores", "det_classes"),
    "tfod": ("num_detections", "detection_boxes", "detection_scores", "detection_classes"),
    "yolov5": ("output",),
    "yolov8": ("output",),
}
# Size used for letterbox/resize when the model's spatial dims are dynamic (-1).
DEFAULT_SIZE = (640, 640)


class ProfileError(ValueError):
    """The model's inputs/outputs are not understood, or a profile file/override is invalid."""


@dataclass(frozen=True)
class ModelProfile:
    """How one model is fed and read. Sizes are (H, W).

    `input_layout` is the order of the image axes (the batch axis, if any, comes first).
    `has_batch_dim`: the request tensor has a leading dim of 1: either Triton batches the
    model (max_batch_size > 0, Triton's config dims leave it out) or the model declares an
    explicit leading 1 with max_batch_size 0. False for e.g. a raw [H, W, 3] image input.
    `input_size` None: dynamic, only meaningful with preprocess "raw" (the image as it is).
    Normalisation (float inputs only): x = (pixel * scale - mean) / std per channel.
    `boxes_in`: where the decoded boxes live: model-input pixels (undo the letterbox/resize),
    original image pixels already, or normalised 0..1 of the model input.
    """

    input_name: str
    input_layout: str
    input_dtype: str
    input_size: tuple[int, int] | None
    has_batch_dim: bool
    preprocess: str
    output_format: str
    output_names: tuple[str, ...]
    boxes_in: str = "input"
    pad_value: float = 114.0
    scale: float = 1 / 255
    mean: tuple[float, float, float] | None = None
    std: tuple[float, float, float] | None = None
    channel_order: str = "RGB"
    score_threshold: float = 0.25
    iou_threshold: float = 0.45
    max_detections: int = 300
    labels: tuple[str, ...] = ()
    # Class count of a raw YOLO output when known (makes [N, 4 + C] vs [4 + C, N] unambiguous).
    num_classes: int | None = None
    # Raw-image models that resize the image themselves: the longest side worth sending.
    # Bigger images are downscaled on the client (less to send, the same boxes). 0: never.
    max_input_side: int | None = None

    def __post_init__(self) -> None:
        for name, value, allowed in (
            ("input_layout", self.input_layout, LAYOUTS),
            ("input_dtype", self.input_dtype, DTYPES),
            ("preprocess", self.preprocess, PREPROCESS),
            ("channel_order", self.channel_order, CHANNEL_ORDERS),
            ("output_format", self.output_format, OUTPUT_FORMATS),
            ("boxes_in", self.boxes_in, BOXES_IN),
        ):
            if value not in allowed:
                raise ProfileError(f"{name} must be one of {', '.join(allowed)}; got {value!r}")
        if self.input_size is not None and (len(self.input_size) != 2 or min(self.input_size) <= 0):
            raise ProfileError(f"input size must be [H, W] with positive values; got {self.input_size}")
        if self.preprocess != "raw" and self.input_size is None:
            raise ProfileError(f"preprocess {self.preprocess!r} needs an input size [H, W]")
        roles = OUTPUT_ROLES[self.output_format]
        if len(self.output_names) != len(roles):
            raise ProfileError(
                f"output format {self.output_format!r} reads {len(roles)} output(s) "
                f"({', '.join(roles)}); got names {list(self.output_names)}"
            )
        if self.output_format == "tfod" and self.boxes_in != "normalized":
            raise ProfileError("output format 'tfod' has normalised boxes: boxes_in must be 'normalized'")
        for key, triple in (("mean", self.mean), ("std", self.std)):
            if triple is not None and len(triple) != 3:
                raise ProfileError(f"{key} needs 3 values (one per channel); got {triple}")
        if self.std is not None and min(abs(v) for v in self.std) == 0:
            raise ProfileError(f"std values must not be 0; got {self.std}")
        if not 0 <= self.score_threshold <= 1 or not 0 <= self.iou_threshold <= 1:
            raise ProfileError(
                f"score/iou thresholds must be within 0..1; got {self.score_threshold}, {self.iou_threshold}"
            )
        if self.max_detections < 1:
            raise ProfileError(f"max_detections must be >= 1; got {self.max_detections}")
        if self.max_input_side not in (None, 0) and not 16 <= self.max_input_side <= 16384:
            raise ProfileError(
                f"max_input_side must be within 16..16384 pixels (0: never downscale); got {self.max_input_side}"
            )
        if self.num_classes is not None and self.num_classes < 1:
            raise ProfileError(f"num_classes must be >= 1; got {self.num_classes}")
