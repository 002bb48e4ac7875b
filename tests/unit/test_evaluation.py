"""app.evaluation without a server: dataset readers' corner cases, class matching, and the
figures against pycocotools on random data (metrics, the matches behind the operating
points at every threshold, the confusion matrix's bookkeeping), strict JSON."""

from __future__ import annotations

import contextlib
import copy
import io
import json
import re
from pathlib import Path

import cv2
import numpy as np
import pytest
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval

from app.evaluation.classes import ClassMapError, match_classes, read_class_map
from app.evaluation.datasets import DatasetError, load_dataset
from app.evaluation.datasets.data_yaml import read_data_yaml
from app.evaluation.datasets.model import Dataset, GroundTruthImage, GroundTruthObject
from app.evaluation.datasets.yolo import in_label_syntax, parse_line
from app.evaluation.evaluate import evaluate_results
from app.evaluation.report import dumps, model_report
from app.inference.result import Detection, InferenceResult, Status
from tests.evaluation_data import Img, Obj, write_dataset, write_images

CLASSES = ["person", "car", "dog"]


# -- readers -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text",
    [
        "names: [person, car, 'dog']\n",
        'names:\n  - person\n  - car\n  - "dog"  # a comment\n',
        "path: ../x\nnames:\n  0: person\n  1: car\n  2: dog\nnc: 3\n",
        "names: {0: person, 1: car, 2: dog}\n",
    ],
)
def test_data_yaml_names_in_every_form(tmp_path: Path, text: str) -> None:
    (tmp_path / "data.yaml").write_text(text + "kpt_shape: [6, 3]\n")
    assert read_data_yaml(tmp_path / "data.yaml") == (CLASSES, (6, 3))


def test_data_yaml_errors_name_the_line(tmp_path: Path) -> None:
    (tmp_path / "data.yaml").write_text("path: .\nnames: person\n")
    with pytest.raises(ValueError, match=r"data.yaml \(line 2\): names must be a list"):
        read_data_yaml(tmp_path / "data.yaml")


def test_yolo_lines() -> None:
    obj, _ = parse_line("1 0.5 0.5 0.2 0.4", "line 1", CLASSES, None, None)
    assert obj is not None and obj.label == "car" and obj.box == pytest.approx((0.4, 0.3, 0.6, 0.7))
    obj, _ = parse_line("2 0.1 0.1 0.3 0.1 0.2 0.3", "line 2", CLASSES, None, None)
    assert obj is not None and obj.polygons == [[0.1, 0.1, 0.3, 0.1, 0.2, 0.3]]
    pose = "0 0.5 0.5 0.2 0.2 " + " ".join(["0.5 0.5 2"] * 5 + ["0 0 0"])
    obj, _ = parse_line(pose, "line 3", CLASSES, None, 6)  # 23 values: pose for a 6-keypoint model
    assert obj is not None and obj.keypoints is not None and obj.keypoints[-3:] == [0.0, 0.0, 0.0]
    for line, message in [
        ("1 0.5 x 0.2 0.4", "'x' is not a number"),
        ("7 0.5 0.5 0.2 0.4", "class id 7 has no name"),
        ("1.5 0.5 0.5 0.2 0.4", "not a class id"),
        ("1 0.5 0.5 0.2", "3 values after the class"),
        ("1 0.5 0.5 0 0.4", "must be positive"),
        ("1 0.5 nan 0.1 0.4", "not a finite number"),
    ]:
        obj, error = parse_line(line, "line 9", CLASSES, None, None)
        assert obj is None and message in error, (line, error)


def test_labelme_shapes_make_objects(tmp_path: Path) -> None:
    """The product's own layout (rectangle, its polygon, its points 'face/<name>', no group ids),
    a circle, and group ids tying a rectangle to points."""
    write_images(tmp_path, [Img("a.png", 100, 100)])
    shapes = [
        {"label": "face", "points": [[10, 10], [50, 50]], "shape_type": "rectangle", "group_id": None},
        {
            "label": "face",
            "points": [[12, 12], [48, 12], [30, 48]],
            "shape_type": "polygon",
            "group_id": None,
        },
        {"label": "face/nose", "points": [[30, 30]], "shape_type": "point", "group_id": None},
        {"label": "face", "points": [[80, 80], [90, 80]], "shape_type": "circle", "group_id": None},
        {"label": "face", "points": [[60, 10], [70, 20]], "shape_type": "rectangle", "group_id": 4},
        {"label": "face/eye", "points": [[65, 15]], "shape_type": "point", "group_id": 4},
        {"label": "lonely", "points": [[1, 1]], "shape_type": "point", "group_id": None},
    ]
    (tmp_path / "a.json").write_text(json.dumps({"shapes": shapes, "imagePath": "a.png"}))
    dataset = load_dataset(tmp_path, keypoint_names=["eye", "nose"])
    objects = dataset.images[0].objects
    assert [o.box for o in objects] == [(10, 10, 50, 50), (70, 70, 90, 90), (60, 10, 70, 20)]
    assert objects[0].polygons == [[12, 12, 48, 12, 30, 48]]
    assert objects[0].keypoints == [0, 0, 0, 30, 30, 2] and objects[2].keypoints == [65, 15, 2, 0, 0, 0]
    assert objects[1].polygons is not None and len(objects[1].polygons[0]) == 64
    assert [(p.where, p.kind) for p in dataset.problems] == [("shapes[6]", "unsupported shape")]


def test_format_detection_and_its_errors(tmp_path: Path) -> None:
    images = [Img("a.png", 64, 64, [Obj("car", (1, 1, 20, 20))])]
    for fmt in ("coco", "yolo", "voc", "labelme"):
        dataset, _ = write_dataset(fmt, tmp_path / fmt, images, CLASSES)
        assert load_dataset(dataset).format == fmt
        if fmt == "coco":  # its folder too
            assert load_dataset(dataset.parent).format == "coco"
    by_yaml = load_dataset(tmp_path / "yolo" / "data.yaml")  # a data.yaml given as the dataset
    assert (by_yaml.format, by_yaml.class_names, by_yaml.annotations) == ("yolo", CLASSES, 1)
    mixed = tmp_path / "voc"
    (mixed / "classes.txt").write_text("car\n")
    with pytest.raises(DatasetError, match=r"looks like voc and yolo; choose with --format \{voc,yolo\}"):
        load_dataset(mixed)
    assert load_dataset(mixed, "voc").format == "voc"
    with pytest.raises(DatasetError, match="no such file or folder"):
        load_dataset(tmp_path / "nothing")
    (tmp_path / "results.json").write_text("[]")
    with pytest.raises(DatasetError, match="neither a COCO dataset nor a labelme file"):
        load_dataset(tmp_path / "results.json")
    with pytest.raises(DatasetError, match="a list of COCO results"):
        load_dataset(tmp_path / "results.json", "coco")


def test_class_map_files(tmp_path: Path) -> None:
    (tmp_path / "m.json").write_text('{"Human": "person", "bike": null}')
    assert read_class_map(tmp_path / "m.json") == {"Human": "person", "bike": ""}
    (tmp_path / "m.txt").write_text('# dataset, model\nHuman,person\n"a, b",car\nmotor bike\tmotorbike\n')
    assert read_class_map(tmp_path / "m.txt") == {"Human": "person", "a, b": "car", "motor bike": "motorbike"}
    (tmp_path / "bad.txt").write_text("Human,person\nonly one column\n")
    with pytest.raises(ClassMapError, match=r"bad.txt \(line 2\): expected two columns"):
        read_class_map(tmp_path / "bad.txt")
    match = match_classes(
        ["Human", "CAR", "bike", "tree"], ["person", "car", "dog"], {"human": "person", "bike": ""}
    )
    assert match.categories == ["person", "car"]
    assert match.dataset_to_category == {"Human": 0, "CAR": 1}
    assert (match.unmatched_dataset, match.dropped_by_map, match.model_only) == (["tree"], ["bike"], ["dog"])


# -- figures against pycocotools on random data -----------------------------------------------------------
def _random_case(seed: int, images: int = 40) -> tuple[Dataset, dict[int, InferenceResult]]:
    """Objects of three classes (a few crowd), detections near them (some of another class,
    some missing, some false), up to 120 on an image (beyond COCO's 100 per image)."""
    rng = np.random.default_rng(seed)
    ds_images, results = [], {}
    for i in range(images):
        objects, dets = [], []
        for k in range(int(rng.integers(0, 12))):
            c = int(rng.integers(3))
            w, h = rng.uniform(8, 200, 2)
            x, y = rng.uniform(0, 640 - w), rng.uniform(0, 480 - h)
            objects.append(
                GroundTruthObject(CLASSES[c], f"o{k}", box=(x, y, x + w, y + h), crowd=rng.random() < 0.05)
            )
            if rng.random() < 0.85:
                j = rng.normal(0, 0.12 * min(w, h), 4)
                label = CLASSES[(c + 1) % 3] if rng.random() < 0.1 else CLASSES[c]
                box = (x + j[0], y + j[1], x + w + j[2], y + h + j[3])
                dets.append(Detection(box, float(rng.uniform(0.05, 1)), 0, label))
        for _ in range(int(rng.integers(0, 4)) + (110 if i == 3 else 0)):
            w, h = rng.uniform(8, 100, 2)
            x, y = rng.uniform(0, 640 - w), rng.uniform(0, 480 - h)
            dets.append(
                Detection((x, y, x + w, y + h), float(rng.uniform(0, 0.8)), 0, CLASSES[int(rng.integers(3))])
            )
        dets.append(Detection((1, 1, 30, 30), 0.99, 0, "tree"))  # a class the dataset does not have
        ds_images.append(GroundTruthImage(Path(f"/d/{i}.png"), f"{i}.png", None, objects))
        results[i] = InferenceResult(
            f"r{i}", Status.OK, f"/d/{i}.png", width=640, height=480, detections=dets
        )
    results[5] = InferenceResult(None, Status.FAILED, "/d/5.png", error="broken")  # left out
    return Dataset("/d", "voc", ds_images, list(CLASSES)), results


def _pycocotools(evaluation, iou_thrs=None):  # type: ignore[no-untyped-def]
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO()
        gt.dataset = copy.deepcopy(evaluation.ground_truth.doc)
        gt.createIndex()
        dt = gt.loadRes(copy.deepcopy(evaluation.detections.anns))
        e = COCOeval(gt, dt, "bbox")
        if iou_thrs is not None:
            e.params.iouThrs = np.array(iou_thrs)
            e.params.areaRng, e.params.areaRngLbl = [[0, 1e10]], ["all"]
        e.evaluate()
        e.accumulate()
        e.summarize()
    return e


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_metrics_and_operating_points_equal_pycocotools(seed: int) -> None:
    dataset, results = _random_case(seed)
    ev = evaluate_results(dataset, results, [*CLASSES, "tree"])
    assert 5 not in ev.evaluated and [r.source for r in ev.failed] == ["/d/5.png"]
    e = _pycocotools(ev)
    names = ["map", "map50", "map75", "map_small", "map_medium", "map_large", "mar_1", "mar_10", "mar_100"]
    for name, value in zip(names, e.stats, strict=False):
        mine = ev.coco.stats[name]
        assert (mine is None and value == -1) or abs(mine - value) < 1e-9, name
    for k in range(3):
        assert ev.coco.class_ap(k)[0] == pytest.approx(
            e.eval["precision"][:, :, k, 0, -1][e.eval["precision"][:, :, k, 0, -1] > -1].mean()
        )
    # pycocotools' own matching at IoU 0.5 (100 per image): TP/FP/FN at any threshold.
    half = _pycocotools(ev, [0.5])
    score_of = {a["id"]: a["score"] for a in half.cocoDt.dataset["annotations"]}
    rng = np.random.default_rng(seed)
    for thresholds in [rng.uniform(0, 1, 3) for _ in range(6)] + [ev.best_thresholds]:
        tp, fp, fn = np.zeros(3, int), np.zeros(3, int), np.zeros(3, int)
        for img in half.evalImgs:
            if img is None:
                continue
            k = img["category_id"] - 1
            t = thresholds[k]
            for det_id, match, ignored in zip(
                img["dtIds"], img["dtMatches"][0], img["dtIgnore"][0], strict=True
            ):
                if ignored or score_of[det_id] < t:
                    continue
                tp[k] += match > 0
                fp[k] += match == 0
            found = {
                m
                for d, m in zip(img["dtIds"], img["dtMatches"][0], strict=True)
                if m > 0 and score_of[d] >= t
            }
            fn[k] += sum(
                1 for g, ign in zip(img["gtIds"], img["gtIgnore"], strict=True) if not ign and g not in found
            )
        point = ev.operating_point(thresholds)
        assert [(c.tp, c.fp, c.fn) for c in point.classes] == list(zip(tp, fp, fn, strict=True))
        assert point.image_tp.sum() == tp.sum() and point.image_fn.sum() == fn.sum()
        cm = ev.confusion(thresholds).matrix
        assert np.diag(cm)[:3].tolist() == tp.tolist()
        assert cm[:3].sum(axis=1).tolist() == (tp + fn).tolist()  # every object once
        assert cm[:, :3].sum(axis=0).tolist() == (tp + fp).tolist()  # every kept detection once
    # The best threshold of each class is F1's maximum over all of them.
    for k in range(3):
        best = ev.operating_point().classes[k].f1 or 0.0
        scores = ev.detections.score[ev.detections.category == k]
        assert all((ev.operating_point({CLASSES[k]: s}).classes[k].f1 or 0) <= best + 1e-12 for s in scores)


def test_report_is_strict_json_with_nulls(tmp_path: Path) -> None:
    dataset, results = _random_case(4, images=6)
    dataset.class_names.append("bus")  # a model class nobody labelled: no AP, no recall
    ev = evaluate_results(dataset, results, [*CLASSES, "bus"])
    report = model_report(ev, "m")
    text = dumps(report)
    assert "NaN" not in text and "Infinity" not in text
    bus = next(row for row in json.loads(text)["per_class"] if row["class"] == "bus")
    assert bus["ap"] is None and bus["recall"] is None and bus["gt"] == 0
    assert json.loads(text)["metrics"]["map"] is not None


def test_the_benchmark_runs_in_smoke_mode(capsys: pytest.CaptureFixture[str]) -> None:
    from tests.bench.bench_evaluate import main

    assert main(["--smoke"]) == 0
    out = capsys.readouterr().out
    assert "evaluate_results" in out and "total" in out and "mAP" in out


def test_only_text_in_yolo_label_syntax_counts_as_a_label_file(tmp_path: Path) -> None:
    cases = {
        "label.txt": ("0 0.5 0.5 0.2 0.2\n1 0.1 0.1 0.05 0.05\n", True),
        "float_class.txt": ("2.0 0.5 0.5 0.2 0.2\n", True),
        "polygon.txt": ("0 " + " ".join(["0.25 0.5"] * 3000) + "\n", True),  # a line beyond the sniff
        "notes.txt": ("took these on the beach\n", False),
        "numbers.txt": ("1 2 3\n", False),
        "negative.txt": ("-1 0.5 0.5 0.2 0.2\n", False),
        "empty.txt": ("", False),
    }
    for name, (text, expected) in cases.items():
        (tmp_path / name).write_text(text)
        assert in_label_syntax(tmp_path / name) is expected, name
    folder = tmp_path / "holiday"
    folder.mkdir()
    cv2.imwrite(str(folder / "a.png"), np.zeros((8, 8, 3), np.uint8))
    (folder / "notes.txt").write_text("took these on the beach\n")
    with pytest.raises(DatasetError, match=rf"^{re.escape(str(folder))}: no labels found \("):
        load_dataset(folder)
    with pytest.raises(DatasetError, match=rf"^{re.escape(str(folder))}: no labels found \(no YOLO"):
        load_dataset(folder, "yolo", model_labels=["face"])
    (folder / "b.txt").write_text("0 0.5 0.5 0.2 0.2\n")  # names no image
    with pytest.raises(DatasetError, match=r"no labels found .*1 label file\(s\) name no image there"):
        load_dataset(folder, "yolo", model_labels=["face"])
    (folder / "a.txt").write_text("0 0.5 0.5 0.2 0.2\n")
    dataset = load_dataset(folder, model_labels=["face"])
    assert dataset.format == "yolo" and dataset.annotations == 1
    assert not any("notes.txt" in p.file for p in dataset.problems), "notes.txt is no label file"
    assert any(p.file.endswith("b.txt") for p in dataset.problems), "b.txt is, and names no image"
