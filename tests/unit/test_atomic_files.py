"""Every file the app writes (the viewer's exports, the command line's reports, recordings) is
written whole or not at all: when the disk refuses it, the old file stays as it was and no
0-byte or partial file is left; streamed lines end on a whole line.

The refusals are real: each writer runs in a process whose files may not grow beyond a few
bytes (RLIMIT_FSIZE: EFBIG, the error path of a full disk; tests/write_failures.py).
"""

from __future__ import annotations

import json
import os
import stat
import textwrap
from pathlib import Path

import pytest

from app.system.atomic_files import LineFile, check_writable, replacing, write_whole
from tests.write_failures import run_python_limited, unwritable_folder

OLD = b"the previous export\n"

# Each snippet writes TARGET (a file) or into FOLDER, and must raise OSError there.
SETUP = """
import numpy as np
from pathlib import Path
from app.inference.result import Detection, InferenceResult, Status
from app.pipeline.exports.images import ExportImage
target, folder = Path(TARGET), Path(FOLDER)
det = Detection((10.0, 10.0, 60.0, 70.0), 0.9, 0, "face")
image = ExportImage(str(folder / "photo.png"), "photo.png", 100, 100, [det] * 3)
result = InferenceResult(request_id="r1", status=Status.OK, source="photo.png", width=100, height=100,
                         detections=[det] * 5)
"""
WRITERS = {
    "coco": "from app.pipeline.exports import write_export\nwrite_export('coco', target, [image] * 20)",
    "yolo": "from app.pipeline.exports import write_export\nwrite_export('yolo', folder, [image])",
    "voc": "from app.pipeline.exports import write_export\nwrite_export('voc', folder, [image])",
    "labelme": "from app.pipeline.exports import write_export\nwrite_export('labelme', folder, [image])",
    "crops": "from app.pipeline.exports.crops import write_crops\n"
    "write_crops(folder, [image], lambda _s: np.full((100, 100, 3), 90, np.uint8))",
    "viewer png": "from PySide6.QtGui import QGuiApplication\napp = QGuiApplication([])\n"
    "from app.ui.batch.export import save_annotated_png\n"
    "save_annotated_png(target, np.full((200, 200, 3), 90, np.uint8), [det])",
    "viewer jsonl": "from app.ui.batch.export import write_jsonl\nwrite_jsonl(target, [result] * 10)",
    "viewer csv": "from app.ui.analysis.csv_export import write_table_csv\n"
    "write_table_csv(target, ['a', 'b'], [['1', '2']] * 50)",
    "evaluate plots": "from app.pipeline.exports.crops import write_png\n"
    "write_png(target, np.full((64, 64, 3), 90, np.uint8))",
    "bench csv": "from app.commands.bench import write_csv\nwrite_csv(str(target), [])",
}


def run_writer(snippet: str, target: Path, folder: Path, limit: int = 40) -> str:
    code = f"TARGET, FOLDER = {str(target)!r}, {str(folder)!r}\n" + textwrap.dedent(SETUP) + snippet
    code += "\nraise SystemExit('written although the files were limited')"
    done = run_python_limited(limit, code)
    assert done.returncode != 0, "the writer did not fail"
    return done.stderr


@pytest.mark.parametrize("name", sorted(WRITERS))
def test_a_writer_refused_by_the_disk_leaves_the_old_file_and_nothing_partial(
    name: str, tmp_path: Path
) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    target = folder / "export.out"
    target.write_bytes(OLD)
    stale = folder / "photo.txt"  # a per-image file of an earlier export
    stale.write_bytes(OLD)
    stderr = run_writer(WRITERS[name], target, folder)
    assert "File too large" in stderr, stderr[-1500:]
    assert target.read_bytes() == OLD
    assert stale.read_bytes() == OLD
    files = sorted(p.name for p in folder.rglob("*") if p.is_file())
    assert files == ["export.out", "photo.txt"], files  # no 0-byte, partial or temporary file


def test_a_recording_cut_by_the_disk_keeps_whole_records(tmp_path: Path) -> None:
    video, jsonl = tmp_path / "rec.avi", tmp_path / "rec.jsonl"
    code = f"""
import numpy as np
from app.sources.recorder import Recorder
rec = Recorder({str(video)!r}, {str(jsonl)!r}, 10.0)
for i in range(40):
    rec.write(np.full((48, 64, 3), i, np.uint8), [{{"box": [1, 2, 3, 4], "score": 0.5}}] * 3, frame=i)
rec.close()
print(rec.error)
"""
    # The video (MJPG frames of a flat image) stays far below the limit; the records do not.
    done = run_python_limited(2000, code)
    assert done.returncode == 0, done.stderr[-1500:]
    assert "the recording stopped there" in done.stdout and "File too large" in done.stdout
    text = jsonl.read_text()
    assert text.endswith("\n")
    frames = [json.loads(line)["frame"] for line in text.splitlines()]
    assert frames == list(range(len(frames))) and 0 < len(frames) < 40
    assert f"({len(frames)} frame record(s) kept" in done.stdout
    assert not list(tmp_path.glob("*.part"))


def test_line_file_keeps_whole_lines_when_a_write_fails(tmp_path: Path) -> None:
    path = tmp_path / "lines.jsonl"
    code = f"""
from app.system.atomic_files import LineFile
f = LineFile({str(path)!r})
n = 0
try:
    while True:
        f.write('{{"n": %d, "pad": "%s"}}\\n' % (n, "x" * 37))
        n += 1
except OSError as e:
    print(f.lines, n, e)
f.close()
"""
    done = run_python_limited(1000, code)
    assert done.returncode == 0, done.stderr[-1500:]
    lines, tried, error = done.stdout.split(" ", 2)
    assert int(lines) == int(tried) and "File too large" in error and f"'{path}'" in error
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["n"] for r in rows] == list(range(int(lines)))
    assert path.read_text().endswith("\n") and path.stat().st_size <= 1000


def test_replacing_renames_only_a_complete_file(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    path.write_bytes(OLD)
    with pytest.raises(KeyError), replacing(path) as f:
        f.write("half")
        raise KeyError("interrupted")
    assert path.read_bytes() == OLD and sorted(tmp_path.iterdir()) == [path]
    write_whole(path, "new\n")
    assert path.read_text() == "new\n" and sorted(tmp_path.iterdir()) == [path]


def test_line_file_discarded_leaves_the_old_file(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_bytes(OLD)
    lines = LineFile(path)
    lines.write("{}\n")
    assert path.read_bytes() == OLD  # not in place before close()
    lines.discard()
    assert path.read_bytes() == OLD and sorted(tmp_path.iterdir()) == [path]
    with LineFile(path) as lines:
        lines.write("{}\n{}\n")
    assert path.read_text() == "{}\n{}\n" and lines.lines == 2


def test_check_writable_names_an_unwritable_or_missing_folder(tmp_path: Path) -> None:
    check_writable(tmp_path / "new" / "deeper", create=True)
    assert (tmp_path / "new" / "deeper").is_dir() and not list((tmp_path / "new" / "deeper").iterdir())
    with pytest.raises(FileNotFoundError):
        check_writable(tmp_path / "missing")
    with unwritable_folder(tmp_path) as folder, pytest.raises(OSError):
        check_writable(folder)


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o604])
def test_a_replaced_file_keeps_its_permissions(tmp_path: Path, mode: int) -> None:
    for name, write in (
        ("whole.json", lambda p: write_whole(p, "{}\n")),
        ("bytes.png", lambda p: write_whole(p, b"\x89PNG")),
        ("lines.jsonl", _write_lines),
    ):
        target = tmp_path / name
        target.write_bytes(OLD)
        target.chmod(mode)
        write(target)
        assert target.read_bytes() != OLD
        assert stat.S_IMODE(target.stat().st_mode) == mode, (name, oct(target.stat().st_mode))


def test_a_new_file_gets_the_umasks_permissions(tmp_path: Path) -> None:
    umask = os.umask(0o027)
    try:
        write_whole(tmp_path / "new.json", "{}\n")
        _write_lines(tmp_path / "new.jsonl")
    finally:
        os.umask(umask)
    assert stat.S_IMODE((tmp_path / "new.json").stat().st_mode) == 0o640
    assert stat.S_IMODE((tmp_path / "new.jsonl").stat().st_mode) == 0o640


def _write_lines(path: Path) -> None:
    with LineFile(path) as lines:
        lines.write('{"a": 1}\n')
