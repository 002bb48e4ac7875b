"""`--help` lists the sub-commands and shows examples; progress lines say how long is left."""

from __future__ import annotations

import io

import pytest

from app.cli import SUBCOMMANDS, build_parser, main
from app.commands.progress import Progress, RequestsLine, format_seconds, time_left
from app.resources import BUNDLED_MODELS, bundled_models


def test_help_lists_every_sub_command_and_examples(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    # One column for the names, one for what they do: the longest name ("repository") fits.
    rows = [line for line in out.splitlines() if line.startswith("  ") and line.split()[0] in SUBCOMMANDS]
    assert [row.split()[0] for row in rows] == list(SUBCOMMANDS)
    for row in rows:
        assert row.endswith(SUBCOMMANDS[row.split()[0]][1]), row
    starts = {row.index(SUBCOMMANDS[row.split()[0]][1]) for row in rows}
    assert len(starts) == 1, "every description starts in the same column:\n" + "\n".join(rows)
    assert "examples:" in out and "triton-viewer infer --format coco --output" in out


@pytest.mark.parametrize("command", list(SUBCOMMANDS))
def test_each_sub_command_has_examples(command: str) -> None:
    text = build_parser(command).format_help()
    assert "examples:" in text and f"triton-viewer {command}" in text.split("examples:")[1]


def test_infer_help_names_the_formats() -> None:
    text = build_parser("infer").format_help()
    assert "{jsonl,coco,yolo,voc,labelme,dota}" in text and "photo.txt" in text


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


def test_serve_help_names_what_it_serves() -> None:
    text = " ".join(build_parser("serve").format_help().split())
    names = bundled_models()
    assert len(names) == 7 and "face detector" not in text
    assert f"the bundled one, 7 models: {', '.join(names)}" in text


def test_every_bundled_model_is_described() -> None:
    """About and `serve --help` name the bundled models from this table: it covers them all."""
    assert sorted(BUNDLED_MODELS) == bundled_models()


def test_a_growing_total_never_sends_the_percentage_back() -> None:
    line = RequestsLine()
    shown = []
    # 336/436 (77%), then a noisy level adds 100: 436/536 would be 81%, 436/636 69%.
    for done, total in ((100, 436), (336, 436), (336, 536), (436, 536), (436, 636), (636, 636)):
        shown.append((round(line.percent(done, total)), line.requests(done, total)))
    percents = [p for p, _ in shown]
    assert percents == sorted(percents) and percents[-1] == 100
    assert shown[4] == (81, "436/636 requests (total +200: a noisy level measured again)")
    assert shown[1][1] == "336/436 requests"


def test_progress_counts_skipped_apart_from_failed() -> None:
    stream = io.StringIO()
    progress = Progress(4, what="inputs", stream=stream, line_interval_s=0.0)
    progress.done(True)
    progress.done(True, skipped=True)
    progress.done(False)
    progress.finish()
    last = stream.getvalue().splitlines()[-1]
    assert last.startswith("3/4 inputs, ") and ", 1 failed, 1 skipped, " in last, last
