"""The evaluation's parts under the viewer's panel, without Qt: the marks of an image (labelled
objects and false positives) at any operating point, the report folder (contents, whole files
or none), the operating point of all classes, and the viewer state's subset and order."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import numpy as np
import pytest

from app.drawing.marks import MarkKind
from app.evaluation.evaluate import evaluate_results
from app.evaluation.export import export_report, operating_point_record
from app.evaluation.image_marks import image_marks
from app.evaluation.report import model_report
from app.inference.result import InferenceResult, Status, record_pixel
from app.ui.state.viewer_state import ViewerState
from tests.unit.test_evaluation import CLASSES, _random_case


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def evaluation():  # type: ignore[no-untyped-def]
    dataset, results = _random_case(7)
    return evaluate_results(dataset, results, [*CLASSES, "tree"]), results


@pytest.mark.parametrize("threshold", [None, 0.0, 0.5, 0.9])
def test_the_marks_of_each_image_are_its_objects_and_its_false_positives(evaluation, threshold) -> None:  # type: ignore[no-untyped-def]
    ev, results = evaluation
    point = ev.operating_point(threshold)
    for index in ev.evaluated:
        marks = image_marks(ev, point, index)
        kinds = [m.kind for m in marks]
        objects = [o for o in ev.dataset.images[index].objects]
        assert len(marks) - kinds.count(MarkKind.FALSE_POSITIVE) == len(objects)
        assert kinds.count(MarkKind.MISSED) == point.image_fn[index]
        assert kinds.count(MarkKind.FALSE_POSITIVE) == point.image_fp[index]
        assert kinds.count(MarkKind.IGNORED) == sum(o.crowd for o in objects)
        # Labelled objects dashed, false positives solid; each at its own box.
        labelled = {tuple(round(v, 6) for v in o.box) for o in objects}
        for mark in marks:
            box = tuple(round(v, 6) for v in mark.outline.box)
            assert mark.outline.dashed is (mark.kind is not MarkKind.FALSE_POSITIVE)
            if mark.kind is MarkKind.FALSE_POSITIVE:
                kept = [
                    d
                    for d in results[index].detections
                    if d.label in CLASSES and (threshold is None or d.score >= threshold)
                ]
                # The box evaluated: the record's (hundredths of a pixel).
                assert box in {tuple(round(record_pixel(v), 6) for v in d.box) for d in kept}
            else:
                assert box in labelled
            assert mark.tag.lines[0].split()[-1].rstrip(")") in CLASSES or "(ignored)" in mark.tag.lines[0]
    # An image the model did not answer has no marks.
    assert image_marks(ev, point, 5) == []


def test_the_operating_point_of_all_classes_adds_their_counts(evaluation) -> None:  # type: ignore[no-untyped-def]
    ev, _ = evaluation
    point = ev.operating_point(0.4)
    total = point.total()
    assert (total.tp, total.fp, total.fn) == tuple(
        sum(getattr(c, k) for c in point.classes) for k in ("tp", "fp", "fn")
    )
    assert total.precision == pytest.approx(total.tp / (total.tp + total.fp))
    assert point.errors().tolist() == (point.image_fp + point.image_fn).tolist()
    record = operating_point_record(ev, 0.4)
    assert record["score"] == 0.4 and record["all"]["tp"] == total.tp
    assert [r["class"] for r in record["per_class"]] == ev.classes.categories


def test_the_report_folder(evaluation, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    ev, _ = evaluation
    report = model_report(ev, "m")
    out = tmp_path / "report"
    written = export_report(out, ev, report)
    names = sorted(p.name for p in written)
    assert names == sorted(
        ["report.json", "per_class.csv", "images.csv", "confusion_matrix.png"]
        + [f"pr_{c}.png" for c in CLASSES]
    )
    assert sorted(p.name for p in out.iterdir()) == names  # nothing else (no scratch left)
    assert json.loads((out / "report.json").read_text(encoding="utf-8")) == json.loads(json.dumps(report))
    rows = read_csv(out / "per_class.csv")
    for row, expected in zip(rows, report["per_class"], strict=True):
        assert row["class"] == expected["class"] and int(row["tp"]) == expected["tp"]
        assert float(row["ap"]) == pytest.approx(expected["ap"], abs=1e-6)
    images = read_csv(out / "images.csv")
    errors = [int(r["errors"]) for r in images]
    assert errors == sorted(errors, reverse=True) and len(images) == len(ev.evaluated)
    assert [r["image"] for r in images[: len(report["worst_images"])]] == [
        w["name"] for w in report["worst_images"]
    ]
    # At a threshold of the slider: the point is in the report, the CSVs are at it.
    export_report(out, ev, report, 0.7)
    again = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert again["operating_point"]["score"] == 0.7 and again["metrics"] == report["metrics"]
    point = ev.operating_point(0.7)
    rows = read_csv(out / "per_class.csv")
    assert [int(r["fp"]) for r in rows] == [c.fp for c in point.classes]


def test_a_failed_export_leaves_the_earlier_files_whole(
    evaluation, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    ev, _ = evaluation
    report = model_report(ev, "m")
    export_report(tmp_path, ev, report)
    before = (tmp_path / "report.json").read_bytes()
    real = os.replace

    def failing(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        if Path(dst).name == "report.json":
            raise OSError(28, "No space left on device")
        real(src, dst)

    monkeypatch.setattr(os, "replace", failing)
    with pytest.raises(OSError, match="No space"):
        export_report(tmp_path, ev, report, 0.9)
    assert (tmp_path / "report.json").read_bytes() == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no partial file left


def test_the_batch_narrowed_and_ordered() -> None:
    state = ViewerState()
    seen: list[None] = []
    state.browsing_changed.connect(seen.append)
    for key in ("a", "b", "c", "d"):
        state.add_entry(key)
        state.set_result(InferenceResult("r" + key, Status.OK, key))
    state.narrow({"b", "d"}, "face missed (2 images)")
    state.narrow({"d", "b"}, "face missed (2 images)")  # the same: no event
    assert state.only == frozenset({"b", "d"}) and state.only_reason == "face missed (2 images)"
    state.set_order(["d", "a"])
    state.set_order(("d", "a"))
    assert state.ordered_keys() == ["d", "a", "b", "c"]  # those not named follow, as they came
    assert len(seen) == 2
    state.clear_batch()
    assert state.only is None and state.order is None and state.only_reason == "" and len(seen) == 4
    assert np.array_equal(np.array(state.ordered_keys()), np.array([]))
