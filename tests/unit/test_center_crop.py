"""A classifier's input as Ultralytics' classify transforms make it: torchvision's Resize (the
shorter side) with Pillow's bilinear filter, then CenterCrop. Pillow itself (in the dev venv,
through scikit-image) is the reference: the app's numpy port must give its bytes."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from app.inference.decoding.center_crop import center_crop, resized_size, vertical_first
from app.inference.profiles.profile import ModelProfile, preprocess


def _pillow(image: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """torchvision's T.Resize + T.CenterCrop on a PIL image, written out."""
    new_h, new_w = resized_size(image.shape[0], image.shape[1], size)
    resized = np.asarray(Image.fromarray(image).resize((new_w, new_h), Image.Resampling.BILINEAR))
    top, left = round((new_h - size[0]) / 2.0), round((new_w - size[1]) / 2.0)
    return resized[top : top + size[0], left : left + size[1]]


@pytest.mark.parametrize(
    ("h", "w", "size"),
    [
        (512, 512, (192, 192)),  # square, shrunk
        (400, 600, (224, 224)),  # wide: the crop drops columns
        (1080, 1920, (224, 224)),
        (380, 180, (192, 192)),  # tall, > 2:1: Pillow 13 runs the vertical pass first
        (1153, 255, (192, 192)),
        (37, 53, (192, 192)),  # enlarged
        (192, 300, (192, 192)),  # the shorter side is the size already: one pass
        (413, 367, (256, 320)),  # a non-square size: resized to it exactly, vertical first
        (413, 367, (320, 256)),
    ],
)
def test_the_crop_is_pillows_to_the_byte(h: int, w: int, size: tuple[int, int]) -> None:
    image = np.random.default_rng(h * w).integers(0, 256, (h, w, 3), dtype=np.uint8)
    got, transform = center_crop(image, size)
    assert got.shape == (*size, 3) and got.flags.c_contiguous
    assert np.array_equal(got, _pillow(image, size))
    new_h, new_w = resized_size(h, w, size)
    assert (transform.src_w, transform.src_h, transform.dst_w, transform.dst_h) == (w, h, size[1], size[0])
    assert transform.affine() == (new_w / w, new_h / h, -transform.left, -transform.top)


def test_the_pass_order_is_pillow_13s() -> None:
    """Pillow 13 resizes vertically first when the height loses more than twice the pixels
    the width loses; the other order differs by a level here and there (not bit-equal)."""
    assert vertical_first(413, 367, 256, 320) and not vertical_first(413, 367, 320, 256)
    assert not vertical_first(964, 482, 320, 160)  # exactly twice: horizontal first
    assert vertical_first(1235, 612, 645, 320)
    assert not vertical_first(100, 100, 300, 50)  # the height grows: never


def test_torchvision_resize_sizes() -> None:
    assert resized_size(400, 600, (224, 224)) == (224, 336)
    assert resized_size(451, 300, (192, 192)) == (288, 192)  # int(192 * 451 / 300) = 288
    assert resized_size(10, 10, (256, 320)) == (256, 320)  # non-square: as it is


def test_preprocess_centre_crops_a_classifier_to_rgb_over_255() -> None:
    profile = ModelProfile(
        input_name="images", input_layout="NCHW", input_dtype="FP32", input_size=(64, 64), has_batch_dim=True,
        preprocess="center_crop", output_format="classify", task="classify", output_names=("output0",),
        scale=1 / 255,
    )  # fmt: skip
    image = np.random.default_rng(3).integers(0, 256, (90, 160, 3), dtype=np.uint8)
    tensor, _ = preprocess(image, profile)
    assert tensor.shape == (1, 3, 64, 64) and tensor.dtype == np.float32
    want = _pillow(image, (64, 64)).transpose(2, 0, 1).astype(np.float32) / 255
    assert np.abs(tensor[0] - want).max() < 1e-6
