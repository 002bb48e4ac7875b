"""`ModelProfile`: everything needed to turn an image into a model's input and its outputs into boxes."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TypeVar

from app.inference.profile_kinds import BoxesIn, KeypointStyle, OutputFormat, Preprocess, Task

LAYOUTS = ("NCHW", "NHWC")
DTYPES = ("FP32", "FP16", "UINT8")
SCORE_ACTIVATIONS = ("sigmoid", "softmax")  # DETR family: RT-DETR / D-FINE, DETR
CHANNEL_ORDERS = ("RGB", "BGR")
SIZE_INPUT_DTYPES = ("INT64", "INT32", "FP32")
MAP_LAYOUTS = ("CHW", "HWC", "HW")
F = OutputFormat
# The output tensors each format reads, in this order (for the detection task).
OUTPUT_ROLES: dict[OutputFormat, tuple[str, ...]] = {
    F.EFFICIENTNMS: ("num_dets", "det_boxes", "det_scores", "det_classes"),
    F.TFOD: ("num_detections", "detection_boxes", "detection_scores", "detection_classes"),
    F.YOLOV5: ("output",),
    F.YOLOV8: ("output",),
    F.END2END: ("output",),
    F.YOLOX: ("output",),
    F.DETR: ("boxes", "logits"),
    F.RTDETR: ("output",),
    F.TORCHVISION: ("boxes", "labels", "scores"),
    F.SCRFD: ("score_8", "score_16", "score_32", "bbox_8", "bbox_16", "bbox_32"),
    F.SEMANTIC: ("map",),
    F.CLASSIFY: ("scores",),
}
# Which output formats each task can be read from.
TASK_FORMATS: dict[Task, tuple[OutputFormat, ...]] = {
    Task.DETECT: (
        F.EFFICIENTNMS,
        F.TFOD,
        F.YOLOV5,
        F.YOLOV8,
        F.END2END,
        F.YOLOX,
        F.DETR,
        F.RTDETR,
        F.TORCHVISION,
        F.SCRFD,
    ),
    # efficientnms + a keypoints output; raw YOLOv8-pose; end-to-end pose; SCRFD + kps_*
    Task.POSE: (F.EFFICIENTNMS, F.YOLOV8, F.END2END, F.SCRFD),
    Task.SEGMENT: (F.YOLOV8, F.END2END),  # detections + mask prototypes
    Task.OBB: (F.YOLOV8, F.END2END),  # raw [4 + C + 1, A] (angle last); end-to-end [N, K, 7]
    Task.SEMANTIC: (F.SEMANTIC,),
    Task.CLASSIFY: (F.CLASSIFY,),
}


def output_roles(output_format: OutputFormat, task: Task) -> tuple[str, ...]:
    """The outputs read for `output_format` doing `task`, in order."""
    roles = OUTPUT_ROLES[output_format]
    if task is Task.POSE and output_format is OutputFormat.EFFICIENTNMS:
        return (*roles, "keypoints")
    if task is Task.POSE and output_format is OutputFormat.SCRFD:
        return (*roles, "kps_8", "kps_16", "kps_32")
    if task is Task.SEGMENT:
        return (*roles, "protos")
    return roles


# Size used for letterbox/resize when the model's spatial dims are dynamic (-1) and nothing
# (an exporter's metadata, a profile) names one; the profile says so (`input_size_source`).
DEFAULT_SIZE = (640, 640)
SIZE_FROM_SHAPE = "the model's input shape"
SIZE_FROM_METADATA = "Ultralytics metadata imgsz"
SIZE_FROM_PROFILE = "profile"
SIZE_DEFAULT = (
    "a default: the input's height and width are dynamic (-1) and "
    "nothing names a size; give [input] size in a profile file"
)


class ProfileError(ValueError):
    """The model's inputs/outputs are not understood, or a profile file/override is invalid."""


K = TypeVar("K", bound=enum.StrEnum)


def parse_kind(kind: type[K], name: str, value: object) -> K:
    """`value` (an enum or its spelling in a profile file) as a `kind`; ProfileError naming
    `name` and the values allowed otherwise."""
    if isinstance(value, kind):
        return value
    if isinstance(value, str) and value in kind.__members__.values():
        return kind(value)
    allowed = ", ".join(k.value for k in kind)
    raise ProfileError(f"{name} must be one of {allowed}; got {value!r}")


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
    preprocess: Preprocess
    output_format: OutputFormat
    output_names: tuple[str, ...]
    boxes_in: BoxesIn = BoxesIn.INPUT
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
    # What the model does; decides which outputs are read and what a result carries.
    task: Task = Task.DETECT
    # pose: keypoints per detection and values per keypoint (2: x, y; 3: x, y, visibility),
    # the lines to draw between them (0-based index pairs) and their names.
    kpt_shape: tuple[int, int] | None = None
    skeleton: tuple[tuple[int, int], ...] = ()
    keypoint_names: tuple[str, ...] = ()
    keypoint_style: KeypointStyle = KeypointStyle.DOTS
    # classify / semantic: the scores are logits (softmax / sigmoid applied by the app).
    logits: bool = False
    top_k: int = 5
    # segment / semantic (one-class probability maps): the probability a pixel needs.
    mask_threshold: float = 0.5
    # Where `input_size` came from, for `models` and the viewer ("the model's input shape",
    # "Ultralytics metadata imgsz", "profile", or a default the user is told about).
    input_size_source: str = ""
    # Decode every image in full, never at a reduced JPEG size: an exporter's own predictor
    # (Ultralytics') decodes in full and resizes, and its detections are the reference.
    full_decode: bool = False
    # semantic: axes of the map (after the batch dim); None: told from the shape.
    map_layout: str | None = None
    # DETR family: sigmoid per class (RT-DETR, D-FINE) or softmax with a last "no object"
    # class (DETR).
    score_activation: str = "sigmoid"
    # How the output layout was recognised (for `models`), e.g. "metadata end2end".
    layout_reason: str = ""
    # A second input that takes each image's size, (width, height) per image, as the official
    # RT-DETR / D-FINE / DEIM exports have (`orig_target_sizes`, INT64 [N, 2]): the app sends
    # the model-input size, so the boxes come back in model-input pixels. None: no such input.
    size_input: str | None = None
    size_input_dtype: str = "INT64"

    def __post_init__(self) -> None:
        # A profile built from strings (a dict, a test) gets its kinds parsed here, with the
        # same messages as a profile file's.
        kinds: tuple[tuple[str, type[enum.StrEnum]], ...] = (
            ("preprocess", Preprocess),
            ("output_format", OutputFormat),
            ("boxes_in", BoxesIn),
            ("task", Task),
            ("keypoint_style", KeypointStyle),
        )
        for name, kind in kinds:
            object.__setattr__(self, name, parse_kind(kind, name, getattr(self, name)))
        for name, value, allowed in (
            ("input_layout", self.input_layout, LAYOUTS),
            ("input_dtype", self.input_dtype, DTYPES),
            ("channel_order", self.channel_order, CHANNEL_ORDERS),
        ):
            if value not in allowed:
                raise ProfileError(f"{name} must be one of {', '.join(allowed)}; got {value!r}")
        if self.input_size is not None and (len(self.input_size) != 2 or min(self.input_size) <= 0):
            raise ProfileError(f"input size must be [H, W] with positive values; got {self.input_size}")
        if self.preprocess is not Preprocess.RAW and self.input_size is None:
            raise ProfileError(f"preprocess {self.preprocess.value!r} needs an input size [H, W]")
        if self.output_format not in TASK_FORMATS[self.task]:
            raise ProfileError(
                f"task {self.task.value!r} reads output format(s) {', '.join(TASK_FORMATS[self.task])}; "
                f"got {self.output_format.value!r}"
            )
        if self.score_activation not in SCORE_ACTIVATIONS:
            raise ProfileError(
                f"score_activation must be one of sigmoid, softmax; got {self.score_activation!r}"
            )
        if self.map_layout is not None and self.map_layout not in MAP_LAYOUTS:
            raise ProfileError(f"map_layout must be one of {', '.join(MAP_LAYOUTS)}; got {self.map_layout!r}")
        self._check_keypoints()
        if self.size_input is not None and self.input_size is None:
            raise ProfileError(f"size input {self.size_input} needs a fixed input size [H, W]")
        if self.size_input is not None and self.size_input_dtype not in SIZE_INPUT_DTYPES:
            raise ProfileError(
                f"size input {self.size_input}: data type must be one of {', '.join(SIZE_INPUT_DTYPES)}; "
                f"got {self.size_input_dtype!r}"
            )
        if self.top_k < 1:
            raise ProfileError(f"top_k must be >= 1; got {self.top_k}")
        if not 0 < self.mask_threshold < 1:
            raise ProfileError(f"mask_threshold must be between 0 and 1; got {self.mask_threshold}")
        roles = output_roles(self.output_format, self.task)
        if len(self.output_names) != len(roles):
            raise ProfileError(
                f"output format {self.output_format.value!r} reads {len(roles)} output(s) "
                f"({', '.join(roles)}); got names {list(self.output_names)}"
            )
        if self.output_format is OutputFormat.TFOD and self.boxes_in is not BoxesIn.NORMALIZED:
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
                "max_input_side must be within 16..16384 pixels (0: never downscale); "
                f"got {self.max_input_side}"
            )
        if self.num_classes is not None and self.num_classes < 1:
            raise ProfileError(f"num_classes must be >= 1; got {self.num_classes}")

    def _check_keypoints(self) -> None:
        if self.kpt_shape is not None:
            k, d = self.kpt_shape
            if k < 1 or d not in (2, 3):
                raise ProfileError(f"kpt_shape must be [K >= 1, 2 or 3]; got {list(self.kpt_shape)}")
        raw = (OutputFormat.YOLOV8, OutputFormat.END2END)
        if self.task is Task.POSE and self.output_format in raw and self.kpt_shape is None:
            raise ProfileError(f"a {self.output_format.value} pose output needs kpt_shape [K, 2 or 3]")
        count = self.kpt_shape[0] if self.kpt_shape else None
        for a, b in self.skeleton:
            if min(a, b) < 0 or (count is not None and max(a, b) >= count):
                raise ProfileError(
                    f"skeleton pair [{a}, {b}] does not name two of the {count or '?'} keypoints (0-based)"
                )
        if self.keypoint_names and count is not None and len(self.keypoint_names) != count:
            raise ProfileError(f"{len(self.keypoint_names)} keypoint names for {count} keypoints")
