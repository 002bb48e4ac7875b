from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtGui import QImage
from pytestqt.qtbot import QtBot

from app.drawing.style import class_rgb
from app.inference.result import Detection, InferenceResult, Status
from app.ui.batch.export import result_json, save_annotated_png, write_jsonl
from app.ui.widgets.banner import ErrorBanner

from .helpers import make_result


def test_annotated_png_has_box_colour_at_edges(qtbot: QtBot, tmp_path: Path) -> None:
    img = np.full((240, 320, 3), 255, np.uint8)
    det = Detection((40, 60, 200, 180), 0.93, 2, "face")
    path = tmp_path / "out.png"
    save_annotated_png(path, img, [det])
    out = QImage(str(path))
    assert (out.width(), out.height()) == (320, 240)
    rgb = class_rgb(2)
    for x, y in [(40, 120), (199, 120), (120, 60), (120, 179)]:  # left, right, top, bottom edges
        c = out.pixelColor(x, y)
        assert (c.red(), c.green(), c.blue()) == rgb, (x, y)
    # Inside and outside the box the image is untouched.
    assert out.pixelColor(120, 120).red() == 255 and out.pixelColor(120, 120).green() == 255
    assert out.pixelColor(260, 220).green() == 255
    # The label background sits just above the box, in the class colour.
    c = out.pixelColor(42, 57)
    assert (c.red(), c.green(), c.blue()) == rgb


def test_jsonl_and_json_records(tmp_path: Path) -> None:
    det = Detection((10, 20, 110, 220), 0.93, 0, "face")
    results = [make_result(1, detections=[det]), make_result(2, Status.TIMEOUT)]
    path = tmp_path / "r.jsonl"
    assert write_jsonl(path, results) == 2
    lines = path.read_text().splitlines()
    assert [json.loads(line) for line in lines] == [r.to_record() for r in results]
    assert json.loads(lines[1])["ok"] is False
    assert json.loads(result_json(results[0]))["detections"][0]["box"] == [10, 20, 110, 220]


def test_error_banner_shows_latest_with_count(qtbot: QtBot) -> None:
    banner = ErrorBanner()
    qtbot.addWidget(banner)
    assert banner.isHidden()
    banner.show_error("server unreachable")
    assert not banner.isHidden() and banner.text() == "server unreachable"
    assert banner.count_label.text() == ""
    banner.show_error("timeout after 5 s")
    assert banner.text() == "timeout after 5 s" and banner.count() == 2
    assert banner.count_label.text() == "\u00d72"
    with qtbot.waitSignal(banner.dismissed, timeout=200):
        banner.close_button.click()
    assert banner.isHidden() and banner.count() == 0


def test_jsonl_export_escapes_names_that_are_not_utf8_like_the_command_line(tmp_path: Path) -> None:
    from app.inference.result import record_line

    name = os.fsdecode(b"/data/caf\xe9.jpg")  # Latin-1 bytes: a surrogate escape in Python
    results = [make_result(1, source=name), make_result(2, source="b.jpg")]
    path = tmp_path / "r.jsonl"
    assert write_jsonl(path, results) == 2
    raw = path.read_bytes()
    assert raw.decode("utf-8").splitlines(keepends=True) == [record_line(r.to_record()) for r in results]
    assert json.loads(raw.splitlines()[0])["source"] == name  # the same str back, escapes and all


def test_a_failed_export_leaves_no_partial_file(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text("previous export\n")

    def results() -> Iterator[InferenceResult]:
        yield make_result(1)
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        write_jsonl(path, results())
    assert path.read_text() == "previous export\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.jsonl"]  # no temporary left behind
