"""`--help` lists the sub-commands and shows examples; progress lines say how long is left."""

from __future__ import annotations

import io

import pytest

from app.cli import SUBCOMMANDS, build_parser, main
from app.commands.progress import Progress, format_seconds, time_left


def test_help_lists_every_sub_command_and_examples(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    for name, (_module, text) in SUBCOMMANDS.items():
        assert f"  {name:<8} {text}" in out, name
    assert "examples:" in out and "triton-viewer infer --format coco --output" in out


@pytest.mark.parametrize("command", list(SUBCOMMANDS))
def test_each_sub_command_has_examples(command: str) -> None:
    text = build_parser(command).format_help()
    assert "examples:" in text and f"triton-viewer {command}" in text.split("examples:")[1]


def test_infer_help_names_the_formats() -> None:
    text = build_parser("infer").format_help()
    assert "{jsonl,coco,yolo,voc,labelme}" in text and "photo.txt" in text


def test_progress_says_what_stage_and_how_long_is_left() -> None:
    stream = io.StringIO()
    progress = Progress(100, what="requests", stream=stream, line_interval_s=0.0, label="level 4 (2/5), app")
    progress.started -= 10.0  # 10 s in
    for _ in range(25):
        progress.done(True)
    last = stream.getvalue().splitlines()[-1]
    assert last.startswith("level 4 (2/5), app: 25/100 requests, ")
    assert last.endswith(", 30 s left"), last  # 75 more at 2.5/s
    progress.count = 100
    progress.finish()
    assert "left" not in stream.getvalue().splitlines()[-1]


def test_time_left_and_its_format() -> None:
    assert time_left(0, 10, 5.0) is None and time_left(5, None, 5.0) is None
    assert time_left(5, 10, 5.0) == 5.0
    assert [format_seconds(s) for s in (8.4, 125, 3720)] == ["8 s", "2 min 05 s", "1 h 02 min"]
