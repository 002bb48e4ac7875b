"""The bundled face detector, served by the real embedded Triton server."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
import skimage.data

from app.server.embedded import EmbeddedServer
from tests.integration.face_check import detect_faces, haar_faces, iou


def test_finds_the_one_face_of_a_real_photograph_where_it_is(triton: EmbeddedServer) -> None:
    photo = skimage.data.astronaut()
    boxes, scores = detect_faces(triton.grpc_url, photo)
    reference = haar_faces(photo)
    assert len(reference) == 1, "the independent detector should see one face"
    assert len(boxes) == 1
    assert scores[0] > 0.7
    assert iou(boxes[0], reference[0]) > 0.5


def test_finds_no_face_on_a_photograph_without_people(triton: EmbeddedServer) -> None:
    boxes, _ = detect_faces(triton.grpc_url, skimage.data.coffee())
    assert len(boxes) == 0


@pytest.mark.parametrize(("height", "width"), [(480, 640), (2000, 3000)])
def test_boxes_are_in_the_pixels_of_frames_of_any_size(
    triton: EmbeddedServer, height: int, width: int
) -> None:
    # A head-and-shoulders crop (the short-range model wants faces that fill a good
    # part of the frame), detected alone, then pasted scaled into a large frame at a
    # known place: the face box must follow it.
    head = np.ascontiguousarray(skimage.data.astronaut()[0:300, 80:380])
    (ref_box,), _ = detect_faces(triton.grpc_url, head)
    size = round(min(height, width) * 0.9)
    scale = size / 300
    left, top = (width - size) // 3, (height - size) // 2
    frame = np.full((height, width, 3), 40, np.uint8)
    frame[top : top + size, left : left + size] = cv2.resize(head, (size, size), interpolation=cv2.INTER_AREA)
    boxes, _ = detect_faces(triton.grpc_url, frame)
    expected = ref_box * scale + np.array([left, top, left, top])
    assert len(boxes) == 1
    assert iou(boxes[0], expected) > 0.7, (boxes[0], expected)


def test_a_batch_of_frames_gives_each_its_own_faces(triton: EmbeddedServer) -> None:
    import tritonclient.grpc as grpcclient

    photo = skimage.data.astronaut()
    batch = np.stack([photo, cv2.resize(skimage.data.coffee(), (512, 512)), photo[:, ::-1]])
    client = grpcclient.InferenceServerClient(triton.grpc_url)
    inp = grpcclient.InferInput("image", list(batch.shape), "UINT8")
    inp.set_data_from_numpy(np.ascontiguousarray(batch))
    result = client.infer("face_detector", [inp])
    client.close()
    counts = result.as_numpy("num_dets")[:, 0].tolist()
    assert counts == [1, 0, 1]
    left, mirrored = result.as_numpy("det_boxes")[0, 0], result.as_numpy("det_boxes")[2, 0]
    # The mirrored photo's face is the mirror image of the first one's.
    assert abs((512 - mirrored[2]) - left[0]) < 3
