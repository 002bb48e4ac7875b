"""The command line's rules for inputs, run in-process through `app.cli.main` (stdout and
stderr captured): a missing path is refused up front by every command that reads inputs
(exit 2, the path named, no server started); `evaluate` on a folder without labels says so
(notes.txt is no label file); `infer`'s progress counts the skipped files."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from app.cli import main
from app.server.embedded import EmbeddedServer

STARTING = "starting the embedded Triton server"  # what `serving` says before a server start


def write_png(path: Path, size: int = 640) -> Path:
    cv2.imwrite(str(path), np.full((size, size, 3), 90, np.uint8))
    return path


@pytest.fixture
def photo(tmp_path: Path) -> Path:
    return write_png(tmp_path / "photo.png", 64)


COMMANDS = {
    "infer": lambda photo, missing: ["infer", str(photo), missing],
    "compare": lambda photo, missing: ["compare", "--model", "a", "--model", "b", missing, str(photo)],
    "evaluate": lambda photo, missing: ["evaluate", missing, "--model", "m"],
    "evaluate --images": lambda photo, missing: ["evaluate", str(photo.parent), "--images", missing],
    "bench": lambda photo, missing: ["bench", "--image", str(photo), "--image", missing],
    "tune": lambda photo, missing: ["tune", "--model", "m", "--image", missing],
}
OPTION = {"evaluate --images": "--images ", "bench": "--image ", "tune": "--image "}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_missing_input_is_refused_up_front_naming_it(
    command: str, photo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = str(tmp_path / "no" / "such.jpg")
    # No --url: a command that did not refuse first would start the embedded server.
    status = main(COMMANDS[command](photo, missing))
    out, err = capsys.readouterr()
    assert status == 2, err
    assert f"error: {OPTION.get(command, '')}{missing}: no such file or folder" in err, err
    assert str(photo) not in err.split("error:")[1], "only the missing path is named"
    assert STARTING not in err and out == "", "refused before any server or record"


def test_every_missing_input_is_named_at_once(photo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["infer", "gone.png", str(photo), "also/gone"]) == 2
    assert "error: gone.png, also/gone: no such file or folder" in capsys.readouterr().err


def test_evaluate_on_a_folder_without_labels_says_so_and_notes_are_no_labels(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "holiday"
    folder.mkdir()
    for name in ("a.png", "b.png"):
        write_png(folder / name, 32)
    (folder / "notes.txt").write_text("took these on the beach\n2 more to sort\n")
    (folder / "todo.txt").write_text("1 2 3\n")  # numbers, but not a label line
    status = main(["evaluate", str(folder), "--model", "m"])
    err = capsys.readouterr().err
    assert status == 2, err
    assert f"error: {folder}: no labels found" in err, err
    assert STARTING not in err, "told before any server start"


def test_yolo_asked_for_on_a_folder_without_labels_says_so_and_notes_are_no_labels(
    triton: EmbeddedServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "holiday"
    folder.mkdir()
    write_png(folder / "a.png")
    (folder / "notes.txt").write_text("took these on the beach\n")
    argv = [
        "evaluate",
        str(folder),
        "--format",
        "yolo",
        "--url",
        triton.grpc_url,
        "--model",
        "fixed_versions",
    ]
    status = main(argv)
    err = capsys.readouterr().err
    assert status == 2, err
    assert f"error: {folder}: no labels found" in err and "notes.txt" not in err, err
    # With one real label file beside it, notes.txt is still not one: no problem is said about it.
    (folder / "a.txt").write_text("0 0.328 0.391 0.3125 0.3125\n")
    (folder / "classes.txt").write_text("face\nhand\ncar\n")
    report = tmp_path / "report.json"
    argv = ["evaluate", str(folder), "--url", triton.grpc_url, "--model", "fixed_versions"]
    status = main([*argv, "--output", str(report)])
    err = capsys.readouterr().err
    assert status == 0, err
    assert "notes.txt" not in err and "notes.txt" not in report.read_text(), err
    document = json.loads(report.read_text())
    assert document["dataset"]["format"] == "yolo" and document["dataset"]["annotations"] == 1
    assert document["metrics"]["map"] is not None


def test_infer_progress_counts_the_skipped_files(
    triton: EmbeddedServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "mixed"
    folder.mkdir()
    write_png(folder / "a.png", 64)
    (folder / "notes.txt").write_text("not an image\n")
    (folder / "data.bin").write_bytes(b"\x00\x01\x02")
    status = main(["infer", "--url", triton.grpc_url, "--model", "fixed_efficientnms", str(folder)])
    out, err = capsys.readouterr()
    assert status == 0, err
    summary = json.loads(out.splitlines()[-1])["summary"]
    assert (summary["total"], summary["ok"], summary["skipped"], summary["failed"]) == (3, 1, 2, 0)
    last = [line for line in err.splitlines() if " inputs, " in line][-1]
    assert last.startswith("3/3 inputs, ") and ", 0 failed, 2 skipped, " in last, err
