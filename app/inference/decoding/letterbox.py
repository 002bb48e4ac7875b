"""Resizing an image to a model's input size, and mapping boxes back to the original image.

Three ways, sharing the `BoxTransform` interface:
- `letterbox`: the Ultralytics convention (keep the aspect ratio, pad evenly);
- `stretch_resize`: plain resize to the input size (aspect ratio not kept);
- `identity`: the model takes the image as it is (raw UINT8 inputs of any size).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import cv2
import numpy as np


class BoxTransform(Protocol):
    """What every transform tells about itself and how boxes go back to the original image."""

    @property
    def src_w(self) -> int: ...
    @property
    def src_h(self) -> int: ...
    @property
    def dst_w(self) -> int: ...
    @property
    def dst_h(self) -> int: ...

    def to_original(self, boxes: np.ndarray) -> np.ndarray:
        """(N, 4) x1, y1, x2, y2 in model-input pixels -> original pixels, clipped to the image."""
        ...

    def affine(self) -> tuple[float, float, float, float]:
        """(sx, sy, tx, ty) with x_in = x * sx + tx, y_in = y * sy + ty (original -> input);
        what maps and masks need to sample the model's output at original pixels."""
        ...


def input_to_original(points: np.ndarray, transform: BoxTransform) -> np.ndarray:
    """(N, 2) x, y in model-input pixels -> original pixels (not clipped)."""
    sx, sy, tx, ty = transform.affine()
    p = np.array(points, dtype=np.float32).reshape(-1, 2)
    p[:, 0] = (p[:, 0] - tx) / sx
    p[:, 1] = (p[:, 1] - ty) / sy
    return p


def clip_boxes(boxes: np.ndarray, width: int, height: int) -> np.ndarray:
    """(N, 4) float32 boxes clipped to [0, width] x [0, height] (a new array)."""
    out = np.array(boxes, dtype=np.float32).reshape(-1, 4)
    np.clip(out[:, 0::2], 0, width, out=out[:, 0::2])
    np.clip(out[:, 1::2], 0, height, out=out[:, 1::2])
    return out


@dataclass(frozen=True)
class LetterboxTransform:
    """Original -> input: x_in = x * gain_x + pad_left, y_in = y * gain_y + pad_top.

    `scale` is the letterbox's ratio r; each side is resized to round(side * r), so the scale
    each axis really got is new_w / w and new_h / h (`gain_x`, `gain_y`), which can differ
    from r by up to half a pixel over the side. Boxes go back through those, as Ultralytics'
    scale_boxes does (8.4): through r they would be up to ~0.5 px off at the far edge."""

    scale: float
    pad_left: int
    pad_top: int
    src_w: int
    src_h: int
    dst_w: int
    dst_h: int

    @property
    def gain_x(self) -> float:
        return max(1, round(self.src_w * self.scale)) / self.src_w

    @property
    def gain_y(self) -> float:
        return max(1, round(self.src_h * self.scale)) / self.src_h

    def to_original(self, boxes: np.ndarray) -> np.ndarray:
        b = np.array(boxes, dtype=np.float32).reshape(-1, 4)
        b[:, 0::2] = (b[:, 0::2] - self.pad_left) / self.gain_x
        b[:, 1::2] = (b[:, 1::2] - self.pad_top) / self.gain_y
        return clip_boxes(b, self.src_w, self.src_h)

    def affine(self) -> tuple[float, float, float, float]:
        return self.gain_x, self.gain_y, float(self.pad_left), float(self.pad_top)


@dataclass(frozen=True)
class ResizeTransform:
    """Original -> input: x_in = x * scale_x, y_in = y * scale_y."""

    scale_x: float
    scale_y: float
    src_w: int
    src_h: int
    dst_w: int
    dst_h: int

    def to_original(self, boxes: np.ndarray) -> np.ndarray:
        b = np.array(boxes, dtype=np.float32).reshape(-1, 4)
        b[:, 0::2] /= self.scale_x
        b[:, 1::2] /= self.scale_y
        return clip_boxes(b, self.src_w, self.src_h)

    def affine(self) -> tuple[float, float, float, float]:
        return self.scale_x, self.scale_y, 0.0, 0.0


@dataclass(frozen=True)
class IdentityTransform:
    """The model saw the original image itself."""

    src_w: int
    src_h: int

    @property
    def dst_w(self) -> int:
        return self.src_w

    @property
    def dst_h(self) -> int:
        return self.src_h

    def to_original(self, boxes: np.ndarray) -> np.ndarray:
        return clip_boxes(boxes, self.src_w, self.src_h)

    def affine(self) -> tuple[float, float, float, float]:
        return 1.0, 1.0, 0.0, 0.0


@dataclass(frozen=True)
class FromReducedSource:
    """`inner` maps the image the client decoded, itself `src_w x src_h` / (kx, ky) smaller
    than the source (a JPEG decoded at 1/2, 1/4 or 1/8), so boxes, keypoints and masks
    are reported in the source's own pixels."""

    inner: BoxTransform
    src_w: int
    src_h: int

    @property
    def dst_w(self) -> int:
        return self.inner.dst_w

    @property
    def dst_h(self) -> int:
        return self.inner.dst_h

    @property
    def _k(self) -> tuple[float, float]:
        return self.src_w / self.inner.src_w, self.src_h / self.inner.src_h

    def to_original(self, boxes: np.ndarray) -> np.ndarray:
        kx, ky = self._k
        b = self.inner.to_original(boxes) * np.array([kx, ky, kx, ky], np.float32)
        return clip_boxes(b, self.src_w, self.src_h)

    def affine(self) -> tuple[float, float, float, float]:
        sx, sy, tx, ty = self.inner.affine()
        kx, ky = self._k
        return sx / kx, sy / ky, tx, ty


def _check_image(image: np.ndarray, size: tuple[int, int]) -> tuple[int, int]:
    if image.ndim not in (2, 3) or image.shape[0] == 0 or image.shape[1] == 0:
        raise ValueError(f"expected a non-empty HxW or HxWxC image, got shape {image.shape}")
    if size[0] <= 0 or size[1] <= 0:
        raise ValueError(f"model input size must be positive (H, W), got {size}")
    return int(image.shape[0]), int(image.shape[1])


def letterbox(
    image: np.ndarray, size: tuple[int, int], pad_value: float = 114
) -> tuple[np.ndarray, LetterboxTransform]:
    """Ultralytics LetterBox (auto=False, center=True): `size` is (H_in, W_in)."""
    h, w = _check_image(image, size)
    h_in, w_in = size
    r = min(h_in / h, w_in / w)
    # At least 1 px: a 1x999 strip would otherwise round to an empty image (OpenCV error).
    new_w, new_h = max(1, round(w * r)), max(1, round(h * r))
    if (new_w, new_h) != (w, h):
        image = cv2.resize(image, (new_w, new_h), interpolation=cv2.INTER_LINEAR)
    dw, dh = (w_in - new_w) / 2, (h_in - new_h) / 2
    # The +-0.1 puts the odd pixel at the right/bottom, exactly as Ultralytics does.
    top, bottom = round(dh - 0.1), round(dh + 0.1)
    left, right = round(dw - 0.1), round(dw + 0.1)
    channels = 1 if image.ndim == 2 else image.shape[2]
    out = cv2.copyMakeBorder(
        image, top, bottom, left, right, cv2.BORDER_CONSTANT, value=(pad_value,) * max(channels, 1)
    )
    if out.ndim == 2 and image.ndim == 3:  # OpenCV drops a trailing axis of 1
        out = out[:, :, None]
    return out, LetterboxTransform(r, left, top, w, h, w_in, h_in)


def letterbox_top_left(
    image: np.ndarray, size: tuple[int, int], pad_value: float = 114
) -> tuple[np.ndarray, ResizeTransform]:
    """YOLOX's preproc: resize by r = min(H_in / h, W_in / w) to (int(w r), int(h r)), the
    image in the top-left corner, padded right and bottom; boxes go back divided by r."""
    h, w = _check_image(image, size)
    h_in, w_in = size
    r = min(h_in / h, w_in / w)
    new_w, new_h = max(1, int(w * r)), max(1, int(h * r))
    if (new_w, new_h) != (w, h):
        image = cv2.resize(image, (new_w, new_h), interpolation=cv2.INTER_LINEAR)
    if image.ndim == 2:
        image = image[:, :, None]
    out = np.full((h_in, w_in, image.shape[2]), pad_value, dtype=image.dtype)
    out[:new_h, :new_w] = image
    return out, ResizeTransform(r, r, w, h, w_in, h_in)


def letterbox_insightface(
    image: np.ndarray, size: tuple[int, int], pad_value: float = 0
) -> tuple[np.ndarray, ResizeTransform]:
    """insightface's SCRFD.detect: the longer side (against the input's aspect ratio) to the
    input's, the other to int(...) of it, the image top-left on `pad_value` (0); boxes go
    back divided by one scale, the new height over the height, on both axes."""
    h, w = _check_image(image, size)
    h_in, w_in = size
    im_ratio, model_ratio = h / w, h_in / w_in
    if im_ratio > model_ratio:
        new_h, new_w = h_in, max(1, int(h_in / im_ratio))
    else:
        new_w, new_h = w_in, max(1, int(w_in * im_ratio))
    scale = new_h / h
    if (new_w, new_h) != (w, h):
        image = cv2.resize(image, (new_w, new_h))  # INTER_LINEAR, OpenCV's default, as theirs
    if image.ndim == 2:
        image = image[:, :, None]
    out = np.full((h_in, w_in, image.shape[2]), pad_value, dtype=image.dtype)
    out[:new_h, :new_w] = image
    return out, ResizeTransform(scale, scale, w, h, w_in, h_in)


def stretch_resize(image: np.ndarray, size: tuple[int, int]) -> tuple[np.ndarray, ResizeTransform]:
    """Resize to `size` (H_in, W_in) without keeping the aspect ratio."""
    h, w = _check_image(image, size)
    h_in, w_in = size
    out = image
    if (h, w) != (h_in, w_in):
        out = cv2.resize(image, (w_in, h_in), interpolation=cv2.INTER_LINEAR)
        if out.ndim == 2 and image.ndim == 3:
            out = out[:, :, None]
    return out, ResizeTransform(w_in / w, h_in / h, w, h, w_in, h_in)


def fit_within(image: np.ndarray, max_side: int) -> tuple[np.ndarray, ResizeTransform | IdentityTransform]:
    """Halve the image (area averaging, aspect ratio kept) while it stays at least `max_side`
    on its longest side: what is sent is max_side to 2 x max_side, never less than the model
    needs. Exact halving is OpenCV's fast path (0.4 ms for 1080p; an arbitrary factor costs
    ~4 ms), and an odd edge is extended by one replicated pixel so the scale stays exactly
    1/2 per step: boxes map back without rounding drift."""
    h, w = _check_image(image, (1, 1))
    out, steps = image, 0
    while max(out.shape[0], out.shape[1]) >= 2 * max_side:
        oh, ow = out.shape[:2]
        if oh % 2 or ow % 2:
            out = cv2.copyMakeBorder(out, 0, oh % 2, 0, ow % 2, cv2.BORDER_REPLICATE)
        halved = cv2.resize(out, (out.shape[1] // 2, out.shape[0] // 2), interpolation=cv2.INTER_AREA)
        out = halved[:, :, None] if halved.ndim == 2 and image.ndim == 3 else halved
        steps += 1
    if steps == 0:
        return identity(image)
    scale = 0.5**steps
    return out, ResizeTransform(scale, scale, w, h, int(out.shape[1]), int(out.shape[0]))


def identity(image: np.ndarray) -> tuple[np.ndarray, IdentityTransform]:
    h, w = _check_image(image, (1, 1))
    return image, IdentityTransform(w, h)
