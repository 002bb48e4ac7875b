"""Each bundled model folder is self-contained: copied alone into another repository (what a
user does to deploy one), it loads there. Before, face_detector and the pipelines imported
`mediapipe_rules` / `pipeline_stages` from the bundled repository's root and failed to load
elsewhere ("No module named 'mediapipe_rules'")."""

from __future__ import annotations

import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from app.resources import model_repository
from app.server.embedded import EmbeddedServer

BUNDLED = sorted(p.name for p in model_repository().iterdir() if (p / "config.pbtxt").is_file())


def test_the_bundled_repository_has_its_models_and_nothing_beside_them() -> None:
    assert {"face_detector", "face_mesh", "person_pose", "pose_detector"} <= set(BUNDLED)
    # Nothing a model could import from the repository's root: each folder carries its own.
    assert [p.name for p in model_repository().iterdir() if p.is_file()] == []


def states_of_a_copy_alone(name: str, tmp_path: Path) -> tuple[dict[str, tuple[str, str]], str]:
    """Each model's state on a server whose repository holds only a real copy of `name`."""
    repository = tmp_path / name / "repository"
    shutil.copytree(model_repository() / name, repository / name)  # a copy, no symlink
    with EmbeddedServer(repository, require_all_ready=False, tracing=None) as server:
        return {m.name: (str(m.state), m.reason) for m in server.models}, server.log_text()[-3000:]


def test_each_bundled_model_copied_alone_into_another_repository_loads(tmp_path: Path) -> None:
    # Three servers start at a time (each waits mostly on its models' stub processes): the
    # seven one after the other took 44 s.
    with ThreadPoolExecutor(3) as pool:
        found = pool.map(lambda name: states_of_a_copy_alone(name, tmp_path), BUNDLED)
        answers = dict(zip(BUNDLED, found, strict=True))
    for name, (states, log) in answers.items():
        assert states == {name: ("READY", "")}, log
