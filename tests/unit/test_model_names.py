"""Model names are checked before any repository call: one folder of the repository, nothing
that walks out of it (`../outside/evil` made Triton run code outside it) or hides in it."""

from __future__ import annotations

import pytest

from app.inference.introspection.model_names import ModelNameError, check_model_name, model_name_problem


@pytest.mark.parametrize(
    ("name", "cause"),
    [
        ("../outside/evil", "path separator"),
        ("..", "starts with a dot"),
        (".hidden", "starts with a dot"),
        ("a/b", "path separator"),
        ("a\\b", "path separator"),
        ("/etc", "path separator"),
        ("", "empty"),
        ("bad\x00name", "control character"),
        ("line\nbreak", "control character"),
        ("x" * 256, "longer than 255 bytes"),
    ],
)
def test_names_that_cannot_be_a_folder_of_the_repository_are_refused_naming_the_cause(
    name: str, cause: str
) -> None:
    problem = model_name_problem(name)
    assert problem is not None and cause in problem
    with pytest.raises(ModelNameError) as refused:
        check_model_name(name)
    assert repr(name) in str(refused.value) and cause in str(refused.value)


@pytest.mark.parametrize("name", ["face_detector", "yolo-v8.1", "fixed_cost", "модель", "a b", "x" * 255])
def test_the_names_triton_repositories_use_pass(name: str) -> None:
    assert model_name_problem(name) is None
    assert check_model_name(name) == name
