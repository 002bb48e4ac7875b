"""`frame_of`: the typed way back from a live result to the frame it was computed on."""

import numpy as np
import pytest

from app.inference.result import InferenceResult, Status
from app.pipeline.live import frame_of
from app.sources.frame import Frame


def test_a_live_result_gives_back_its_frame() -> None:
    frame = Frame(index=7, image=np.zeros((4, 4, 3), np.uint8), source="cam", timestamp=1.0)
    result = InferenceResult("r1", Status.OK, source="cam", frame=7, tag=frame)
    assert frame_of(result) is frame


def test_a_result_without_a_frame_is_refused_with_its_name() -> None:
    result = InferenceResult("r2", Status.OK, source="a.jpg", tag="not a frame")
    with pytest.raises(TypeError, match=r"r2 of a\.jpg carries no live frame"):
        frame_of(result)
