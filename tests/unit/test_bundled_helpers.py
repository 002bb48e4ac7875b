"""The bundled models' shared helpers (MediaPipe's rules, the BLS stage calls) are copies inside
each model folder that uses them, so each folder deploys alone (see
tests/integration/test_bundled_models_alone.py). Copies drift: every copy must equal the
others, and every model that imports a helper must carry it."""

from __future__ import annotations

import re
from pathlib import Path

from app.resources import model_repository

HELPERS = ("mediapipe_rules", "pipeline_stages")


def model_files() -> list[Path]:
    return sorted(model_repository().glob("*/1/model.py"))


def test_every_copy_of_a_helper_is_the_same_text() -> None:
    for helper in HELPERS:
        copies = sorted(model_repository().glob(f"*/*/{helper}.py"))
        assert len(copies) >= 3, copies
        texts = {copy.read_text() for copy in copies}
        assert len(texts) == 1, f"{helper}.py differs between {[str(c) for c in copies]}"


def test_a_model_that_imports_a_helper_carries_it_beside_its_model_file() -> None:
    importers = 0
    for model in model_files():
        for helper in HELPERS:
            if re.search(rf"^\s*import {helper}$", model.read_text(), re.MULTILINE):
                importers += 1
                assert (model.parent / f"{helper}.py").is_file(), f"{model} imports {helper}"
    assert importers == 7  # face_detector: 1; pose_detector, face_mesh, person_pose: 2 each
