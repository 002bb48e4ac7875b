"""The viewer's "Where the time goes" with a pipeline, against the real server: face_mesh's
two stages, their queue, compute and calls per request of face_mesh, the rest of its compute
and its total, and the note that the stages' figures count other clients' requests too;
nothing of the kind for a single model."""

from __future__ import annotations

import re
from pathlib import Path

import cv2
import pytest
import skimage.data

from app.server.embedded import EmbeddedServer
from app.ui.analysis.stage_split import SHARED_NOTE
from app.ui.analysis.stats_panel import format_ms
from tests.ui.viewer_fixtures import Harness, image_folder, until

pytestmark = [pytest.mark.gui, pytest.mark.slow]


def test_where_the_time_goes_shows_a_pipelines_stages(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    folder = image_folder(tmp_path / "faces", 12, skimage.data.astronaut())
    viewer = harness.viewer(triton.grpc_url, "face_mesh", open_paths=[str(folder)])
    viewer.window.time_dock.raise_()
    split = viewer.window.time_split
    harness.run(until(lambda: split.stages.isVisible(), timeout=90, what="the stages' figures"))
    server = viewer.server_split.split
    assert server is not None and [s.model for s in server.stages] == ["face_detector", "face_landmark"]

    texts = split.stages.row_texts()
    assert len(texts) == 4, texts
    for text, stage in zip(texts, server.stages, strict=False):
        queue, compute = format_ms(stage.queue_ms), format_ms(stage.compute_ms)
        assert (
            text == f"{stage.model} queue {queue} compute {compute} calls {stage.count / server.requests:.2f}"
        )
    assert re.fullmatch(r"outside the stages compute [\d.]+ ms", texts[2]), texts[2]
    total = f"queue {format_ms(server.queue_ms)} compute {format_ms(server.compute_ms)}"
    assert texts[3] == f"face_mesh in all {total}"
    assert "Stages of face_mesh" in split.stages.title.text()
    assert split.stages.note.isVisible() and split.stages.note.text() == SHARED_NOTE
    assert "other clients'" in SHARED_NOTE
    parts = split.stages.bar.parts
    assert len(parts) == 4 and sum(value for value, _ in parts) > 0  # queue, 2 stages, the rest
    assert split.batcher.isVisible(), "the batcher's figures as for any model"


def test_a_single_model_shows_no_stages(harness: Harness, triton: EmbeddedServer, tmp_path: Path) -> None:
    photo = cv2.resize(skimage.data.astronaut(), (128, 128))
    folder = image_folder(tmp_path / "faces", 12, photo)
    viewer = harness.viewer(triton.grpc_url, "face_detector", open_paths=[str(folder)])
    viewer.window.time_dock.raise_()
    split = viewer.window.time_split
    harness.run(until(lambda: split.batcher.isVisible(), timeout=90, what="the server's figures"))
    assert viewer.server_split.split is not None and viewer.server_split.split.stages == ()
    assert split.stages.isHidden() and split.stages.row_texts() == []
