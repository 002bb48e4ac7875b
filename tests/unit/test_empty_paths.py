"""`""` (or blanks, or an unset shell variable) as a path is refused with exit status 2 naming
the option, in every command that takes paths and in the viewer's own arguments, before
anything runs: it would otherwise mean the current folder (22,377 records of a checkout)."""

from __future__ import annotations

import pytest

from app.cli import main

CASES = [
    ["infer", ""],
    ["infer", "a.png", "  "],
    ["infer", "--output", "", "a.png"],
    ["infer", "--labels", "", "a.png"],
    ["infer", "--profile", "", "a.png"],
    ["infer", "--root-certificates", "", "a.png"],
    ["infer", "--header-file", "", "a.png"],
    ["compare", "--model", "a", "--model", "b", ""],
    ["compare", "--model", "a", "--model", "b", "--output", "", "x.png"],
    ["evaluate", "", "--model", "m"],
    ["evaluate", "data", "--model", "m", "--output", ""],
    ["evaluate", "data", "--model", "m", "--records", ""],
    ["evaluate", "data", "--model", "m", "--plots", ""],
    ["evaluate", "data", "--model", "m", "--class-map", ""],
    ["evaluate", "data", "--model", "m", "--images", ""],
    ["bench", "--image", ""],
    ["bench", "--output", ""],
    ["bench", "--csv", ""],
    ["tune", "--model", "m", "--image", ""],
    ["tune", "--model", "m", "--output", ""],
    ["tune", "--model", "m", "--write-config", ""],
    ["serve", "--model-repository", ""],
    ["repository", "load", "m", "--config", ""],
    ["--open", ""],  # the viewer
    [""],  # the viewer's FILE arguments ("Open with")
    ["--screenshot", ""],
    ["--camera", ""],
]


@pytest.mark.parametrize("argv", CASES, ids=[" ".join(repr(a) for a in c) for c in CASES])
def test_an_empty_path_is_refused_naming_the_option(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as done:
        main(argv)
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert "an empty path" in err and "name a file or folder" in err, err
    assert "error: argument " in err  # which option (or PATH / DATASET / FILE) it was
