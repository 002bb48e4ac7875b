"""Profile files: values out of range or not finite are refused, naming the file and the key;
labels_file is found relative to the profile, wherever the program runs from."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.inference.profiles.profile import ProfileError, load_profile_file


@pytest.mark.parametrize(
    ("text", "key", "why"),
    [
        ("[postprocess]\nscore_threshold = nan\n", "score_threshold", "finite"),
        ("[postprocess]\niou_threshold = 1.5\n", "iou_threshold", "within 0..1"),
        ("[postprocess]\nmax_detections = 0\n", "max_detections", "within 1..100000"),
        ("[input]\nscale = inf\n", "scale", "finite"),
        ("[input]\nscale = 0\n", "scale", "must not be 0"),
        ("[input]\nmean = [0.5, nan, 0.5]\n", "mean", "finite"),
        ("[input]\nstd = [1.0, 0.0, 1.0]\n", "std", "must not be 0"),
        ("[input]\nsize = [0, 640]\n", "input_size", "within 1..8192"),
        ("[input]\nsize = [640, 100000]\n", "input_size", "within 1..8192"),
        ("[input]\npad_value = 300\n", "pad_value", "within 0..255"),
        ("[output]\nnum_classes = -3\n", "num_classes", "within 1..100000"),
    ],
)
def test_bad_values_name_the_file_and_the_key(tmp_path: Path, text: str, key: str, why: str) -> None:
    f = tmp_path / "model.toml"
    f.write_text(text)
    with pytest.raises(ProfileError) as caught:
        load_profile_file(f)
    message = str(caught.value)
    assert str(f) in message and f"{key} = " in message and why in message


def test_labels_file_is_relative_to_the_profile_not_the_working_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    profiles = tmp_path / "profiles"
    (profiles / "names").mkdir(parents=True)
    (profiles / "names" / "pets.txt").write_text("cat\ndog\n")
    f = profiles / "pets.toml"
    f.write_text('labels_file = "names/pets.txt"\n')
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "names").mkdir()
    (elsewhere / "names" / "pets.txt").write_text("wrong\n")  # a decoy where the cwd would look
    monkeypatch.chdir(elsewhere)
    assert load_profile_file(f)["labels"] == ("cat", "dog")
    assert load_profile_file(Path("..") / "profiles" / "pets.toml")["labels"] == ("cat", "dog")


def test_a_missing_labels_file_names_the_profile_and_the_resolved_path(tmp_path: Path) -> None:
    f = tmp_path / "m.toml"
    f.write_text('labels_file = "nope.txt"\n')
    with pytest.raises(ProfileError) as caught:
        load_profile_file(f)
    assert f"{f}: labels_file: labels file {tmp_path / 'nope.txt'}: not found" in str(caught.value)
