"""Pure decoding beyond boxes: masks and their RLE, instance masks from prototypes, semantic
maps, top-k classes, keypoints, and the JSONL records they make."""

import numpy as np
import pycocotools.mask as coco_mask
import pytest

from app.inference.decoding.bilinear import resize_window, taps
from app.inference.decoding.decode_classify import top_k
from app.inference.decoding.decode_masks import PrototypeUpsampler, instance_masks
from app.inference.decoding.decode_pose import selected_keypoints, yolov8_keypoints
from app.inference.decoding.decode_semantic import semantic_masks
from app.inference.decoding.letterbox import IdentityTransform, LetterboxTransform, ResizeTransform
from app.inference.masks import BinaryMask, decode_rle
from app.inference.profiles.postprocess import decode_outputs
from app.inference.profiles.profile import ModelProfile
from app.inference.result import ClassScore, Detection, InferenceResult, SemanticMask, Status


# -- BinaryMask ---------------------------------------------------------------------------------
def test_binary_mask_keeps_its_pixels_and_rle_is_pycocotools() -> None:
    rng = np.random.default_rng(0)
    full = np.zeros((37, 53), bool)
    full[5:30, 10:41] = rng.random((25, 31)) > 0.4
    mask = BinaryMask.from_full(full)
    assert np.array_equal(mask.full(), full) and mask.area == int(full.sum())
    x1, y1, x2, y2 = mask.bbox()
    assert full[:, :x1].sum() == full[:, x2:].sum() == full[:y1].sum() == full[y2:].sum() == 0
    reference = coco_mask.encode(np.asfortranarray(full.astype(np.uint8)))
    rle = mask.rle()
    assert rle == {"size": [37, 53], "counts": reference["counts"].decode("ascii")}
    assert np.array_equal(decode_rle(rle), full)
    assert int(coco_mask.area(reference)) == mask.area
    assert mask == BinaryMask(full[y1:y2, x1:x2], x1, y1, (37, 53))


def test_empty_and_misplaced_masks() -> None:
    empty = BinaryMask.from_full(np.zeros((4, 6), bool))
    assert empty.area == 0 and empty.full().shape == (4, 6) and decode_rle(empty.rle()).sum() == 0
    with pytest.raises(ValueError, match="outside"):
        BinaryMask(np.ones((3, 3), bool), 5, 0, (4, 6))
    with pytest.raises(ValueError, match="2-D"):
        BinaryMask.from_full(np.ones((2, 2, 2), bool))


# -- records --------------------------------------------------------------------------------------
def test_records_gain_keys_only_when_the_model_gives_them() -> None:
    plain = Detection((1.0, 2.0, 3.0, 4.0), 0.5, 0, "a")
    assert list(plain.to_record()) == ["box", "score", "class_id", "label"]
    full = np.zeros((10, 10), bool)
    full[2:5, 3:7] = True
    rich = Detection((1.0, 2.0, 3.0, 4.0), 0.5, 0, "a", ((1.234, 2.0, 0.5),), BinaryMask.from_full(full))
    record = rich.to_record()
    assert record["keypoints"] == [[1.23, 2.0, 0.5]] and record["area"] == 12
    assert np.array_equal(decode_rle(record["mask"]), full)
    result = InferenceResult("r1", Status.OK, detections=[plain])
    assert "masks" not in result.to_record() and "classes" not in result.to_record()
    result.masks = [SemanticMask(3, "road", BinaryMask.from_full(full))]
    result.classes = [ClassScore(7, "cat", 0.912345)]
    record = result.to_record()
    assert record["masks"] == [
        {"class_id": 3, "label": "road", "mask": BinaryMask.from_full(full).rle(), "area": 12}
    ]
    assert record["classes"] == [{"class_id": 7, "label": "cat", "score": 0.912345}]  # unrounded
    failed = InferenceResult("r2", Status.FAILED, error="boom", masks=[], classes=[])
    assert failed.to_record()["masks"] == [] and failed.to_record()["classes"] == []


# -- instance masks --------------------------------------------------------------------------------
def _disk_protos(cx: float, cy: float, r: float, size: int = 160, cell: float = 4.0) -> np.ndarray:
    centres = (np.arange(size) + 0.5) * cell
    y, x = np.meshgrid(centres, centres, indexing="ij")
    protos = np.zeros((3, size, size), np.float32)
    protos[1] = r - np.hypot(x - cx, y - cy)
    return protos


@pytest.mark.parametrize(("h", "w"), [(480, 640), (640, 360), (1000, 1000)])
def test_instance_mask_follows_the_letterbox_and_the_box(h: int, w: int) -> None:
    r = min(640 / h, 640 / w)
    left, top = round((640 - round(w * r)) / 2 - 0.1), round((640 - round(h * r)) / 2 - 0.1)
    transform = LetterboxTransform(r, left, top, w, h, 640, 640)
    protos = _disk_protos(320, 320, 150)
    box_in = np.array([[170, 170, 400, 470]], np.float32)  # cuts the disk on the right
    (mask,) = instance_masks(np.array([[0, 2.0, 0]], np.float32), protos, box_in, transform)
    assert mask is not None
    xs, ys = (np.arange(w) + 0.5) * r + left, (np.arange(h) + 0.5) * r + top
    x, y = np.meshgrid(xs, ys)
    want = (np.hypot(x - 320, y - 320) < 150) & (x >= 170) & (x < 400) & (y >= 170) & (y < 470)
    got = mask.full()
    assert (got & want).sum() / (got | want).sum() > 0.99
    box = transform.to_original(box_in)
    bx1, by1, bx2, by2 = mask.bbox()  # the crop is at input pixels: within a pixel of the box
    assert bx1 >= np.floor(box[0, 0]) - 1 and by1 >= np.floor(box[0, 1]) - 1
    assert bx2 <= np.ceil(box[0, 2]) + 1 and by2 <= np.ceil(box[0, 3]) + 1


def test_instance_mask_threshold_and_empty_boxes() -> None:
    protos = np.full((1, 8, 8), 0.5, np.float32)  # sigmoid(0.5) = 0.62
    t = IdentityTransform(32, 32)
    masks = instance_masks(
        np.ones((2, 1), np.float32), protos, np.array([[0, 0, 32, 32], [5, 5, 5, 9]]), t, 0.6
    )
    assert masks[0] is not None and masks[0].area == 32 * 32
    assert masks[1] is None  # empty at the input's size: Ultralytics drops the detection
    (strict,) = instance_masks(np.ones((1, 1), np.float32), protos, np.array([[0, 0, 32, 32]]), t, 0.7)
    assert strict is None
    with pytest.raises(ValueError, match="coefficients"):
        instance_masks(np.ones((1, 2), np.float32), protos, np.array([[0, 0, 1, 1]]), t)


def test_bilinear_taps_are_pytorchs() -> None:
    """The weights torch 2's F.interpolate(bilinear, align_corners=False) gives from 256 to 413
    (read off a one-hot input): index 206 sits exactly half-way between inputs 127 and 128 in
    exact arithmetic; torch's fused multiply-add puts it at 0.5000076, and a mask's edge there
    follows that."""
    t = taps(256, 413)
    for u, first, w_first, w_second in (
        (1, 0, 0.5702178478240967, 0.42978212237358093),
        (3, 1, 0.33050835132598877, 0.6694916486740112),
        (206, 127, 0.49999237060546875, 0.5000076293945312),
    ):
        assert (t.first[u], t.second[u]) == (first, first + 1)
        assert (float(t.w_first[u]), float(t.w_second[u])) == (w_first, w_second)
    assert (t.first[412], t.second[412], float(t.w_first[412] + t.w_second[412])) == (255, 255, 1.0)
    assert taps(64, 256).w_second[:4].tolist() == [0.0, 0.0, 0.125, 0.375]  # clamped at the edge


def test_prototypes_upsampled_on_a_window_equal_the_whole_resize() -> None:
    """The 4x OpenCV path on a box's window of prototypes gives PyTorch's whole-input resize
    (bilinear.py's taps) at those pixels, to float rounding, edges included."""
    rng = np.random.default_rng(0)
    protos = rng.normal(size=(3, 40, 48)).astype(np.float32)
    coef = rng.normal(size=3).astype(np.float32)
    up = PrototypeUpsampler(protos, 160, 192)
    assert up.factor == 4
    whole = resize_window(np.einsum("k,khw->hw", coef, protos), (0, 0), up.rows, up.cols, (0, 160), (0, 192))
    for rows, cols in (((0, 160), (0, 192)), ((13, 77), (5, 101)), ((150, 160), (180, 192))):
        window = up.logits(coef, rows, cols)
        assert np.abs(window - whole[rows[0] : rows[1], cols[0] : cols[1]]).max() < 1e-5
    assert PrototypeUpsampler(protos, 120, 144).factor == 0  # 3x: the generic taps


def _extent(full: np.ndarray) -> tuple[int, int, int, int]:
    rows, cols = np.flatnonzero(full.any(axis=1)), np.flatnonzero(full.any(axis=0))
    return int(cols[0]), int(rows[0]), int(cols[-1]) + 1, int(rows[-1]) + 1


def test_instance_mask_crops_by_pixel_index_at_the_input_size() -> None:
    """Ultralytics' crop_mask keeps input column c when x1 <= c < x2 (c the index, not the
    centre c + 0.5), and drops a detection whose mask is empty there; the letterbox's padding
    is never part of a mask."""
    protos = np.ones((1, 8, 8), np.float32)  # positive everywhere
    t = IdentityTransform(32, 32)
    (mask,) = instance_masks(np.ones((1, 1), np.float32), protos, np.array([[10.2, 3.0, 20.0, 7.5]]), t)
    assert mask is not None and mask.area == 9 * 5
    assert _extent(mask.full()) == (11, 3, 20, 8)
    (thin,) = instance_masks(np.ones((1, 1), np.float32), protos, np.array([[10.2, 3.0, 10.9, 9.0]]), t)
    assert thin is None  # no column index within [10.2, 10.9)
    padded = LetterboxTransform(0.5, 0, 8, 64, 32, 32, 32)  # a 64x32 image in rows 8..23
    (top, bottom) = instance_masks(
        np.ones((2, 1), np.float32), protos, np.array([[0, 0, 32, 8], [0, 0, 32, 9]]), padded
    )
    assert top is not None and top.area == 0  # non-empty at the input's size: kept, but all padding
    assert bottom is not None and bottom.area == 64 * 2 and _extent(bottom.full()) == (0, 0, 64, 2)


# -- semantic maps ----------------------------------------------------------------------------------
def _stripes() -> np.ndarray:
    """Scores [3, 8, 16]: class 1 in the top half, class 2 in the right quarter of the bottom."""
    scores = np.zeros((3, 8, 16), np.float32)
    scores[0] = 1
    scores[1, :4] = 5
    scores[2, 4:, 12:] = 5
    return scores


def test_semantic_layouts_agree_and_skip_the_background() -> None:
    t = ResizeTransform(0.5, 0.5, 32, 16, 16, 8)  # the map covers the input, half the image's size
    labels = ("background", "sky", "car")
    chw = semantic_masks(_stripes(), t, labels)
    hwc = semantic_masks(_stripes().transpose(1, 2, 0)[None], t, labels, layout="HWC")
    ids = semantic_masks(_stripes().argmax(axis=0).astype(np.int64), t, labels, layout="HW")
    for masks in (chw, hwc, ids):
        assert [(m.class_id, m.label) for m in masks] == [(1, "sky"), (2, "car")]
        sky, car = (m.mask.full() for m in masks)
        assert sky[:8].all() and not sky[8:].any()
        assert car[8:, 24:].all() and car.sum() == 8 * 8


def test_single_class_probability_and_logits() -> None:
    p = np.zeros((1, 1, 4, 4), np.float32)
    p[..., 1:3, 1:3] = 0.9
    t = IdentityTransform(4, 4)
    (person,) = semantic_masks(p, t, ("person",))
    assert person.label == "person" and person.mask.area == 4
    logits = np.where(p > 0.5, 3.0, -3.0).astype(np.float32)
    assert semantic_masks(logits, t, ("person",), logits=True)[0].mask == person.mask
    assert semantic_masks(p * 0.5, t, ("person",)) == []  # nobody above the threshold


def test_semantic_map_shapes_are_checked() -> None:
    with pytest.raises(ValueError, match="one image"):
        semantic_masks(np.zeros((2, 3, 8, 8), np.float32), IdentityTransform(8, 8), ())
    with pytest.raises(ValueError, match="class ids"):
        semantic_masks(np.full((8, 8), -1, np.int32), IdentityTransform(8, 8), (), layout="HW")


# -- classification ---------------------------------------------------------------------------------
def test_top_k_with_and_without_softmax() -> None:
    logits = np.array([[1.0, 3.0, 2.0, -1.0]], np.float32)
    best = top_k(logits, ("a", "b", "c"), k=3, logits=True)
    e = np.exp(logits[0] - 3.0)
    probs = e / e.sum()
    assert [(c.class_id, c.label) for c in best] == [(1, "b"), (2, "c"), (0, "a")]
    assert [c.score for c in best] == pytest.approx([probs[1], probs[2], probs[0]], abs=1e-6)
    raw = top_k(np.array([0.1, 0.7, 0.2], np.float32).reshape(1, 3, 1, 1), (), k=5)
    assert [(c.class_id, c.label, round(c.score, 3)) for c in raw] == [
        (1, "class 1", 0.7), (2, "class 2", 0.2), (0, "class 0", 0.1),
    ]  # fmt: skip
    with pytest.raises(ValueError, match="one score vector"):
        top_k(np.zeros((2, 5), np.float32), ())


# -- keypoints ----------------------------------------------------------------------------------------
def test_keypoints_from_pose_rows_and_from_a_keypoints_output() -> None:
    rows = np.zeros((4 + 1 + 2 * 3, 5), np.float32)
    rows[5:, 3] = [10, 20, 0.9, 30, 40, 0.1]
    got = yolov8_keypoints(rows, np.array([3]), 5, (2, 3))
    assert np.allclose(got, [[[10, 20, 0.9], [30, 40, 0.1]]])
    xy_only = yolov8_keypoints(rows[:9], np.array([3]), 5, (2, 2))
    assert xy_only[0, :, 2].tolist() == [1.0, 1.0]
    slots = np.arange(1 * 4 * 2 * 3, dtype=np.float32).reshape(1, 4, 2, 3)
    assert np.array_equal(selected_keypoints(slots, np.array([2, 0]), None), slots[0, [2, 0]])
    assert np.array_equal(selected_keypoints(slots.reshape(1, 4, 6), np.array([1]), (2, 3)), slots[0, [1]])
    with pytest.raises(ValueError, match="kpt_shape"):
        selected_keypoints(slots.reshape(1, 4, 6), np.array([1]), None)


def test_decode_outputs_carries_keypoints_of_the_kept_rows_in_original_pixels() -> None:
    profile = ModelProfile(
        input_name="image", input_layout="NHWC", input_dtype="UINT8", input_size=None, has_batch_dim=True,
        preprocess="raw", output_format="efficientnms", boxes_in="original", task="pose", kpt_shape=(2, 3),
        output_names=("num_dets", "det_boxes", "det_scores", "det_classes", "det_keypoints"),
    )  # fmt: skip
    outputs = {
        "num_dets": np.array([[2]], np.int32),
        "det_boxes": np.array([[[0, 0, 10, 10], [20, 20, 60, 70], [0, 0, 1, 1]]], np.float32),
        "det_scores": np.array([[0.3, 0.9, 0.99]], np.float32),
        "det_classes": np.zeros((1, 3), np.int32),
        "det_keypoints": np.array(
            [[[[1, 2, 0.3], [3, 4, 0.3]], [[25, 30, 0.9], [90, 35, 0.9]], [[0, 0, 1]] * 2]], np.float32
        ),
    }  # fmt: skip
    dets = decode_outputs(outputs, profile, IdentityTransform(80, 60)).detections
    assert [d.score for d in dets] == pytest.approx([0.9, 0.3])  # num_dets = 2: the third slot is not one
    assert np.allclose(dets[0].keypoints, ((25, 30, 0.9), (80, 35, 0.9)))  # x clipped to the image
    assert np.allclose(dets[1].keypoints, ((1, 2, 0.3), (3, 4, 0.3)))
