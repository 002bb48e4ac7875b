"""Model profiles: image -> model input tensor, output tensors -> detections in original pixels.

The public face of the profile modules:
- `ModelProfile`, `ProfileError` (profile_types.py),
- `detect_profile(metadata, config, overrides=None)` (profile_detect.py),
- `load_profile_file(path)`, `apply_overrides(profile, overrides)` (profile_file.py; the TOML
  format is documented there),
- `preprocess(image, profile)` (here), `decode_outputs(outputs, profile, transform, ...)`
  (everything a reply carries) and `postprocess(...)` (its detections) (postprocess.py).
"""

from __future__ import annotations

import numpy as np

from app.inference.decoding.center_crop import center_crop
from app.inference.decoding.letterbox import (
    BoxTransform,
    fit_within,
    identity,
    letterbox,
    letterbox_insightface,
    letterbox_top_left,
    stretch_resize,
)
from app.inference.profile_kinds import Preprocess
from app.inference.profiles.postprocess import DecodedOutputs, decode_outputs, postprocess
from app.inference.profiles.profile_detect import detect_profile
from app.inference.profiles.profile_file import apply_overrides, load_profile_file
from app.inference.profiles.profile_types import DEFAULT_SIZE, ModelProfile, ProfileError

__all__ = [
    "DecodedOutputs",
    "ModelProfile",
    "ProfileError",
    "apply_overrides",
    "decode_outputs",
    "detect_profile",
    "load_profile_file",
    "postprocess",
    "preprocess",
]

LETTERBOXES = (Preprocess.LETTERBOX, Preprocess.LETTERBOX_TOP_LEFT, Preprocess.LETTERBOX_INSIGHTFACE)
_NUMPY_DTYPES = {"FP32": np.float32, "FP16": np.float16, "UINT8": np.uint8}


def input_side_needed(profile: ModelProfile) -> int | None:
    """The longest side an image needs to be for this model (None: as it is). A letterbox
    shrinks the longest side to at most the input's: decoding smaller than that loses
    nothing. A raw-image model says so itself (`max_input_side`). A stretch-resize needs
    both sides, which a longest-side hint cannot promise: None. Nor for a profile that wants
    the exporter's own pixels (`full_decode`): a JPEG decoded at 1/2 is not the same image."""
    if profile.full_decode:
        return None
    if profile.preprocess is Preprocess.RAW:
        return profile.max_input_side or None
    if profile.preprocess in LETTERBOXES:
        return max(profile.input_size or DEFAULT_SIZE)
    return None


def preprocess(image: np.ndarray, profile: ModelProfile) -> tuple[np.ndarray, BoxTransform]:
    """RGB uint8 HxWx3 image -> (contiguous tensor to send as `profile.input_name`, transform
    mapping the model's boxes back to this image)."""
    if image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] != 3:
        raise ValueError(
            f"preprocess expects an RGB uint8 HxWx3 image, got {image.dtype} {image.shape} "
            "(use images.to_rgb_uint8 first)"
        )
    size = profile.input_size or DEFAULT_SIZE
    transform: BoxTransform
    if profile.preprocess is Preprocess.LETTERBOX:
        img, transform = letterbox(image, size, profile.pad_value)
    elif profile.preprocess is Preprocess.LETTERBOX_TOP_LEFT:
        img, transform = letterbox_top_left(image, size, profile.pad_value)
    elif profile.preprocess is Preprocess.LETTERBOX_INSIGHTFACE:
        img, transform = letterbox_insightface(image, size, profile.pad_value)
    elif profile.preprocess is Preprocess.RESIZE:
        img, transform = stretch_resize(image, size)
    elif profile.preprocess is Preprocess.CENTER_CROP:
        img, transform = center_crop(image, size)
    elif profile.max_input_side:
        img, transform = fit_within(image, profile.max_input_side)
    else:
        img, transform = identity(image)
    if profile.channel_order == "BGR":
        img = img[:, :, ::-1]
    if profile.input_layout == "NCHW":
        # Transpose while still uint8: 4x less memory to move than after the float conversion.
        img = img.transpose(2, 0, 1)
    if profile.input_dtype == "UINT8":
        tensor = np.ascontiguousarray(img, dtype=np.uint8)
    else:
        x = img.astype(np.float32)
        if profile.scale != 1.0:
            # 1/255 and its kin as the exporters apply them: Ultralytics' `im /= 255`,
            # torchvision's div(255). In float32, x * (1/255) is an ulp off x / 255 for half the
            # grey levels, which on saturated scores can tip a tie of two classes.
            divisor = 1.0 / profile.scale
            if abs(divisor - round(divisor)) < 1e-9:
                x /= np.float32(round(divisor))
            else:
                x *= np.float32(profile.scale)
        if profile.mean is not None or profile.std is not None:
            shape = (3, 1, 1) if profile.input_layout == "NCHW" else (1, 1, 3)
            x -= np.asarray(profile.mean or (0.0, 0.0, 0.0), np.float32).reshape(shape)
            x /= np.asarray(profile.std or (1.0, 1.0, 1.0), np.float32).reshape(shape)
        tensor = np.ascontiguousarray(x, dtype=_NUMPY_DTYPES[profile.input_dtype])
    if profile.has_batch_dim:
        tensor = tensor[None]
    return tensor, transform
