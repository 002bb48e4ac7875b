"""`python -m app evaluate DATASET --model NAME [--model NAME2]`: accuracy against labelled
data (COCO JSON, YOLO, Pascal VOC, labelme) with the speed of the same run -> one JSON report.

A thin adapter over app.evaluation: the dataset's images go through `DatasetRun` (the
normal `BatchJob` pipeline, as `infer`), the results through `evaluate_results` (COCO
metrics by faster-coco-eval, operating points, confusion matrix), then `report`/`plots`.
With two models, each runs on its own (one after the other, so each one's speed is its own).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from app.commands.common import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    add_connection_arguments,
    add_speed_arguments,
    add_threshold_arguments,
    concurrency_argument,
    delivery_of,
    eprint,
    path_argument,
    serving,
    session_spec,
    tell_session,
)
from app.commands.inputs import require_inputs
from app.commands.outputs import (
    check_file_output,
    check_folder_output,
    close_records,
    discard_records,
    records_failure,
    write_output,
)
from app.commands.progress import Progress
from app.commands.resume import Resumed
from app.commands.resume import find as find_resumed
from app.commands.trace_output import TraceRun, add_trace_arguments
from app.evaluation.classes import ClassMapError, read_class_map
from app.evaluation.datasets import FORMATS, Dataset, DatasetError, detect_format, load_dataset
from app.evaluation.evaluate import Evaluation, evaluate_results, iou_type_problem
from app.evaluation.iou_type import IOU_TYPES, IouType
from app.evaluation.plots import write_plots
from app.evaluation.report import all_problems, comparison_report, dumps, model_report
from app.evaluation.run import DatasetRun
from app.inference.core.open_session import open_session
from app.inference.core.session import TritonSession
from app.inference.core.spec import SessionSpec
from app.inference.errors import SessionError
from app.inference.profiles.profile import ProfileError
from app.inference.result import InferenceResult, naming_input, record_line
from app.inference.result_records import result_from_record
from app.system.atomic_files import LineFile, describe_write_error, write_whole

READERS = 0  # images are read on the feeding thread (as `infer` on a small machine)
PROBLEM_LINES = 20  # dataset problems echoed on stderr (all of them are in the report)
FAILURE_LINES = 20


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "dataset",
        type=path_argument,
        metavar="DATASET",
        help="a COCO .json file, a data.yaml, or a dataset folder",
    )
    add_connection_arguments(p)
    p.add_argument(
        "--model",
        action="append",
        default=[],
        metavar="NAME",
        help="the model to evaluate (default: face_detector, or the only one ready), or a model file "
        "(.onnx, .tflite) to serve; give it twice to compare two models on the same data",
    )
    p.add_argument(
        "--profile",
        type=path_argument,
        default=None,
        metavar="FILE",
        help="TOML profile overriding detection (each model)",
    )
    p.add_argument(
        "--labels",
        type=path_argument,
        default=None,
        metavar="FILE",
        help="class names, one per line (each model)",
    )
    add_threshold_arguments(p)
    add_speed_arguments(p)
    p.add_argument(
        "--format",
        choices=FORMATS,
        default=None,
        help="the dataset's format (default: told from its files)",
    )
    p.add_argument(
        "--images",
        type=path_argument,
        default=None,
        metavar="DIR",
        help="where the images are, when not beside the labels (e.g. a YOLO labels folder or a COCO file "
        "written by `infer --format`)",
    )
    p.add_argument(
        "--allow-outside-paths",
        action="store_true",
        help="read images the label files name outside the dataset's folder and --images (../x.jpg, "
        "an absolute path elsewhere); without it they are named and not read",
    )
    p.add_argument(
        "--iou-type",
        choices=IOU_TYPES,
        default=IouType.BBOX.value,
        help="bbox (default): boxes; segm: masks (instance or semantic models); keypoints: OKS",
    )
    p.add_argument(
        "--class-map",
        type=path_argument,
        default=None,
        metavar="FILE",
        help='rename dataset classes to the model\'s: JSON {"dataset name": "model name"} or two '
        "columns (tab or comma); an empty model name drops the class",
    )
    p.add_argument(
        "--output",
        type=path_argument,
        default=None,
        metavar="FILE.json",
        help="write the report here (default stdout)",
    )
    p.add_argument(
        "--records",
        type=path_argument,
        default=None,
        metavar="FILE.jsonl",
        help="also write each image's result (infer's records)",
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue a run that was killed: keep the records it wrote to --records (its "
        "temporary NAME.*.part file, or the file itself), send only the images they do not "
        "answer, and score them all",
    )
    add_trace_arguments(p, path_argument)
    p.add_argument(
        "--plots",
        type=path_argument,
        default=None,
        metavar="DIR",
        help="write PR curves and the confusion matrix as PNG",
    )
    p.add_argument(
        "--concurrency",
        type=concurrency_argument,
        default=8,
        metavar="N",
        help="requests in flight at most (default 8)",
    )
    p.epilog = """\
exit status: 0 every image evaluated, 1 some image failed or was left out (reported, and not
in the metrics), 2 usage, dataset or connection error, 130 interrupted"""


def open_model(spec: SessionSpec, model: str | None) -> TritonSession:
    """The session of one model of the command line's spec, as `infer` opens it."""
    try:
        return open_session(dataclasses.replace(spec, model=model))
    except SessionError as e:
        raise SessionError(f"model {model or '(default)'}: {e}", e.kind, e.models) from None


class RecordsFile:
    """--records: every image's record as `infer` writes it, plus the model's name (any thread).
    The first record that cannot be written stops the run (`on_broken`); the file then ends on
    a whole record."""

    def __init__(self, path: str | None) -> None:
        self._stream: LineFile | None = None
        self._lock = threading.Lock()
        self.broken: str | None = None
        self.on_broken: Callable[[], None] | None = None
        self.used = False  # a run wrote through it (else the file is dropped at close)
        self.traces: TraceRun | None = None  # --trace: traced requests' records wait for their trace
        if path is not None:
            check_file_output("--records", path)
            try:
                self._stream = LineFile(path)
            except OSError as e:
                raise UsageError(f"--records {path}: cannot write it ({e.strerror or e})") from None

    def carry_over(self, resumed: Resumed) -> None:
        """An earlier run's records, first in the file (--resume); its temporary file goes."""
        if self._stream is None or not resumed.lines:
            return
        try:
            for line in resumed.lines:
                self._stream.write(line)
        except (OSError, ValueError) as e:
            raise UsageError(f"--records {records_failure(self._stream, e)}") from None
        resumed.remove_source()

    def write(self, model: str, result: InferenceResult) -> None:
        if self._stream is None:
            return
        record = {**result.to_record(), "model": model}
        if self.traces is not None and self.traces.hold_parts(
            record, {None: result.request_id}, self.write_record
        ):
            return  # written with its trace, once known (TraceRun)
        self.write_record(record)

    def write_record(self, record: dict[str, Any]) -> None:
        assert self._stream is not None
        line = record_line(record)
        with self._lock:
            if self.broken is not None:
                return
            try:
                self._stream.write(line)
            except (OSError, ValueError) as e:
                self.broken = f"--records {records_failure(self._stream, e)}"
                stop = self.on_broken
            else:
                return
        eprint(f"error: {self.broken}")
        if stop is not None:
            stop()

    def close(self, ran: bool = True) -> bool:
        """Into place (False, after saying why, if that failed); `ran` False: dropped instead."""
        if self._stream is None:
            return True
        status = (close_records if ran else discard_records)(self._stream, EXIT_OK)
        return status == EXIT_OK


def run(args: argparse.Namespace) -> int:
    records: RecordsFile | None = None
    status = EXIT_USAGE
    try:
        models = list(args.model) or [None]
        if len(models) > 2:
            raise UsageError(f"--model is given {len(models)} times: evaluate one model, or compare two")
        # The dataset before anything else: a missing path or a folder without labels costs
        # no server start.
        require_inputs([args.dataset])
        require_inputs([args.images], "--images")
        if args.format is None:
            detect_format(Path(args.dataset))
        class_map = read_class_map(args.class_map) if args.class_map else None
        # Every file asked for is checked before any inference: a run is not lost to a typo.
        check_file_output("--output", args.output)
        check_folder_output("--plots", args.plots)
        resumed = None
        if args.resume:  # before this run's own temporary file exists
            resumed = find_resumed("--records", args.records)
            eprint(resumed.describe("--records"))
        records = RecordsFile(args.records)
        records.traces = TraceRun.from_args(args)
        if resumed is not None:
            records.carry_over(resumed)
            records.used = True  # the file holds records: kept whatever happens next
        with serving(session_spec(args, delivery=delivery_of(args))) as spec:
            # --model PATH: session_spec named the file's model in args.model.
            status = _evaluate_all(args, spec, list(args.model) or models, class_map, records, resumed)
    except (UsageError, SessionError, ProfileError, DatasetError, ClassMapError) as e:
        eprint(f"error: {e}")
        status = EXIT_USAGE
    except KeyboardInterrupt:  # before any image was sent (e.g. while the server started)
        eprint("interrupted")
        status = EXIT_INTERRUPTED
    finally:
        if records is not None and not records.close(ran=records.used):
            status = status if status != EXIT_OK else EXIT_FAILED
    return status


def _evaluate_all(
    args: argparse.Namespace,
    spec: SessionSpec,
    models: list[str | None],
    class_map: dict[str, str] | None,
    records: RecordsFile,
    resumed: Resumed | None = None,
) -> int:
    reports: list[dict[str, Any]] = []
    dataset: Dataset | None = None
    unsuccessful = interrupted = False
    for side, model in zip("ab", models, strict=False):
        session = open_model(spec, model)
        if records.traces is not None:
            records.traces.attach(session)
        try:
            info = session.info
            name = info.name if info else (model or "?")
            profile = session.profile
            keypoint_names = list(profile.keypoint_names)
            if dataset is None:
                dataset = load_dataset(
                    args.dataset,
                    args.format,
                    args.images,
                    model_labels=profile.labels,
                    keypoint_names=keypoint_names,
                    allow_outside_paths=args.allow_outside_paths,
                )
                _describe(dataset)
            _check_iou_type(IouType(args.iou_type), name, profile.task, profile.kpt_shape)
            label = f"{side.upper()} '{name}'" if len(models) > 1 else ""
            earlier = _earlier_results(resumed, name)
            run = _run(session, dataset, args, name, records, label, earlier)
            if records.traces is not None:  # before the session closes: its server's last traces
                records.traces.finish_session(session)
            if records.broken:  # said when it happened: no report on the images answered before
                return EXIT_FAILED
            interrupted = interrupted or run.interrupted
            evaluation = evaluate_results(
                dataset,
                run.results,
                profile.labels,
                class_map=class_map,
                iou_type=IouType(args.iou_type),
                keypoint_names=keypoint_names,
                keypoint_count=profile.kpt_shape[0] if profile.kpt_shape else None,
            )
        finally:
            session.close(drain_timeout=0.5)
        report = model_report(evaluation, name, run.speed())
        if resumed is not None:
            report["resumed"] = {
                "from": None if resumed.source is None else str(resumed.source),
                "records": len(earlier),
            }
        if run.interrupted:  # the figures are those of the images answered before it
            report["interrupted"] = True
            report["not_started"] = run.counts.not_started if run.counts is not None else 0
        _warn(evaluation, name if len(models) > 1 else None)
        unsuccessful = unsuccessful or bool(evaluation.failed) or _left_out(evaluation)
        if args.plots:
            prefix = f"{side}_" if len(models) > 1 else ""
            try:
                written = write_plots(evaluation, args.plots, prefix)
                eprint(f"plots: {len(written)} PNG file(s) in {args.plots}")
            except OSError as e:  # the first file that could not be written (none is left partial)
                eprint(f"error: --plots {describe_write_error(e.filename or args.plots, e)}")
                unsuccessful = True
        _say_metrics(report, label)
        reports.append(report)
        if interrupted:
            break
    if records.traces is not None:
        records.traces.finish()
    final = comparison_report(reports[0], reports[1]) if len(reports) == 2 else reports[0]
    if not _write_report(final, args.output):
        return EXIT_FAILED
    if interrupted:
        return EXIT_INTERRUPTED
    return EXIT_FAILED if unsuccessful else EXIT_OK


def _check_iou_type(iou_type: IouType, model: str, task: str, kpt_shape: tuple[int, int] | None) -> None:
    problem = iou_type_problem(iou_type, model, task, kpt_shape)
    if problem is not None:
        raise UsageError(f"--iou-type {iou_type}: {problem}")


def _run(
    session: TritonSession,
    dataset: Dataset,
    args: argparse.Namespace,
    name: str,
    records: RecordsFile,
    label: str,
    earlier: dict[str, InferenceResult] | None = None,
) -> DatasetRun:
    progress = Progress(None, what="images", label=label)
    failures = [0]

    def started(total: int) -> None:
        progress.total = total
        eprint(f"{total} image(s) -> model '{name}' at {', '.join(session.urls)}")
        tell_session(session)

    def on_result(_index: int, result: InferenceResult) -> None:
        records.write(name, result)
        if not result.ok and failures[0] < FAILURE_LINES:
            failures[0] += 1
            progress.note(
                f"{result.status.value}: {naming_input(result.source, str(result.error), result.frame)}"
            )
        progress.done(result.ok)

    run = DatasetRun(
        session,
        dataset,
        window=args.concurrency,
        on_result=on_result,
        on_started=started,
        readers=READERS,
        earlier=earlier,
    )
    records.on_broken, records.used = run.cancel, True
    try:
        run.run()
    except KeyboardInterrupt:
        eprint("\ninterrupted: the requests in flight were cancelled; evaluating the images answered")
    progress.finish()
    return run


def _earlier_results(resumed: Resumed | None, model: str) -> dict[str, InferenceResult]:
    """--resume: the results of `model` an earlier run recorded, by source."""
    if resumed is None:
        return {}
    earlier: dict[str, InferenceResult] = {}
    for record in resumed.records_of(model):
        try:
            earlier[record["source"]] = result_from_record(record)
        except ValueError as e:
            eprint(f"warning: --resume: {record['source']}: {e}; sent again")
    return earlier


def _describe(dataset: Dataset) -> None:
    eprint(
        f"dataset: {dataset.format}, {len(dataset.images)} image(s), {dataset.annotations} annotation(s), "
        f"classes: {', '.join(dataset.class_names) or 'none'}"
    )


def _left_out(evaluation: Evaluation) -> bool:
    return any(p.image_dropped for p in evaluation.dataset.problems)


def _warn(evaluation: Evaluation, model: str | None) -> None:
    who = f" ({model})" if model else ""
    classes = evaluation.classes
    if classes.unmatched_dataset:
        eprint(
            f"warning{who}: dataset class(es) naming no model class, not evaluated: "
            f"{', '.join(classes.unmatched_dataset)} (rename them with --class-map)"
        )
    problems = all_problems(evaluation)
    shown = [p for p in problems if p.dropped or p.image_dropped or p.kind != "note"]
    for p in shown[:PROBLEM_LINES]:
        eprint(f"warning{who}: {p.text()}")
    if len(shown) > PROBLEM_LINES:
        eprint(
            f"warning{who}: {len(shown) - PROBLEM_LINES} more problem(s): see the report's dataset.dropped"
        )
    for p in problems:
        if p.kind == "note":
            eprint(f"note{who}: {p.text()}")
    dropped = sum(p.dropped for p in problems)
    images = sum(1 for p in problems if p.image_dropped)
    if dropped or images:
        eprint(f"dataset{who}: {dropped} annotation(s) dropped, {images} image(s) left out (see the report)")
    if evaluation.failed:
        eprint(f"{len(evaluation.failed)} image(s) failed{who}: not in the metrics (listed in the report)")


def _say_metrics(report: dict[str, Any], label: str) -> None:
    m = report["metrics"]

    def fmt(v: float | None) -> str:
        return "n/a" if v is None else f"{v:.3f}"

    prefix = f"{label}: " if label else ""
    eprint(f"{prefix}mAP {fmt(m.get('map'))}, mAP50 {fmt(m.get('map50'))}, mAP75 {fmt(m.get('map75'))}")


def _write_report(report: dict[str, Any], path: str | None) -> bool:
    text = dumps(report)
    if path is not None:
        if not write_output("--output", path, lambda: write_whole(path, text)):
            return False
        eprint(f"report: {path}")
        return True
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except (OSError, ValueError) as e:
        eprint(f"error: cannot write the report: {e}")
        return False
    return True
