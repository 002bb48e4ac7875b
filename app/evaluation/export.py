"""The viewer's "Export the report": into one folder, each file written whole or not at all (a
temporary file renamed over the target): report.json (the `evaluate` command's report, plus
the operating point shown when it is not each class's best F1), per_class.csv and images.csv
at that operating point, and the PNGs of `--plots` (PR curves, confusion matrix) at it too."""

from __future__ import annotations

import contextlib
import csv
import io
import os
import shutil
import tempfile
import uuid
from pathlib import Path
from typing import Any

import numpy as np

from app.evaluation.evaluate import Evaluation, Thresholds
from app.evaluation.operating import ClassPoint, OperatingPoint
from app.evaluation.plots import write_plots
from app.evaluation.report import dumps, finite

PER_CLASS_COLUMNS = (
    "class", "ap", "ap50", "gt", "score_threshold", "precision", "recall", "f1", "tp", "fp", "fn"
)  # fmt: skip
IMAGE_COLUMNS = ("image", "source", "tp", "fp", "fn", "errors")


def _figures(point: ClassPoint) -> dict[str, Any]:
    return {
        "precision": point.precision,
        "recall": point.recall,
        "f1": point.f1,
        "tp": point.tp,
        "fp": point.fp,
        "fn": point.fn,
    }


def operating_point_record(evaluation: Evaluation, thresholds: Thresholds | None) -> dict[str, Any]:
    """P/R/F1 and the errors of every class and of all together at `thresholds` (None: each
    class's best F1)."""
    point = evaluation.operating_point(thresholds)
    per_class = [
        {"class": name, "score_threshold": c.threshold, **_figures(c)}
        for name, c in zip(evaluation.classes.categories, point.classes, strict=True)
    ]
    record = {
        "score": "best F1 per class" if thresholds is None else thresholds,
        "all": _figures(point.total()),
        "per_class": per_class,
    }
    cleaned: dict[str, Any] = finite(record)
    return cleaned


def per_class_rows(
    evaluation: Evaluation, thresholds: Thresholds | None, point: OperatingPoint | None = None
) -> list[dict[str, Any]]:
    """AP, AP50, objects and the operating point's figures of every class (`point`: the
    operating point at `thresholds` when already computed)."""
    point = point or evaluation.operating_point(thresholds)
    coco = evaluation.coco
    rows = []
    for k, name in enumerate(evaluation.classes.categories):
        ap, ap50 = coco.class_ap(k) if coco else (None, None)
        c = point.classes[k]
        rows.append(
            {"class": name, "ap": ap, "ap50": ap50, "gt": int(evaluation.points.gt_count[k])}
            | {"score_threshold": c.threshold}
            | _figures(c)
        )
    return rows


def image_rows(evaluation: Evaluation, thresholds: Thresholds | None) -> list[dict[str, Any]]:
    """Every evaluated image, most errors (false positives + misses) first."""
    point = evaluation.operating_point(thresholds)
    errors = point.errors()
    images = evaluation.dataset.images
    order = sorted(evaluation.evaluated, key=lambda i: (-int(errors[i]), -int(point.image_fn[i]), i))
    return [
        {
            "image": images[i].name,
            "source": str(images[i].path),
            "tp": int(point.image_tp[i]),
            "fp": int(point.image_fp[i]),
            "fn": int(point.image_fn[i]),
            "errors": int(errors[i]),
        }
        for i in order
    ]


def csv_text(columns: tuple[str, ...], rows: list[dict[str, Any]]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, columns, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: _cell(row.get(k)) for k in columns})
    return out.getvalue()


def _cell(value: Any) -> Any:
    if value is None or (isinstance(value, float | np.floating) and not np.isfinite(value)):
        return ""
    if isinstance(value, float | np.floating):
        return round(float(value), 6)
    return value


def write_text(path: Path, text: str) -> None:
    """`text` into `path` whole or not at all (a failure leaves an earlier file as it was)."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.part")
    try:
        with open(tmp, "x", encoding="utf-8", newline="") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def export_report(
    folder: str | Path,
    evaluation: Evaluation,
    report: dict[str, Any],
    thresholds: Thresholds | None = None,
) -> list[Path]:
    """Write the report's files into `folder` (made if missing); returns them. `report`: the
    command's report of this evaluation (model_report)."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    full = dict(report)
    if thresholds is not None:
        full["operating_point"] = operating_point_record(evaluation, thresholds)
    written = []
    for name, text in (
        ("report.json", dumps(full)),
        ("per_class.csv", csv_text(PER_CLASS_COLUMNS, per_class_rows(evaluation, thresholds))),
        ("images.csv", csv_text(IMAGE_COLUMNS, image_rows(evaluation, thresholds))),
    ):
        write_text(out / name, text)
        written.append(out / name)
    # The PNGs are drawn in a folder of their own beside, then each renamed into place.
    scratch = Path(tempfile.mkdtemp(prefix=".plots-", dir=out))
    try:
        for png in write_plots(evaluation, scratch, thresholds=thresholds):
            os.replace(png, out / png.name)
            written.append(out / png.name)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return written
