"""A model file dropped on the viewer (or Model > Open model file…) is loaded on the server it
is connected to and the viewer switches to its model: its detections carry the file's class
names. A bad file is named in the banner and the viewer keeps its model."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from skimage import data

from app.inference.introspection.repository import RepositoryControl, RepositoryError, RepositoryErrorKind
from app.inference.protocol import parse_url
from app.server.embedded import EmbeddedServer
from tests.integration.test_cli_infer import parse, run_cli
from tests.ui.viewer_fixtures import Harness, until, write_png

pytestmark = [pytest.mark.gui, pytest.mark.slow]
TINY = Path(__file__).resolve().parents[1] / "model_files" / "tiny_detector.onnx"
NAME = "tiny_detector"


@pytest.fixture
def server(triton: EmbeddedServer) -> Iterator[EmbeddedServer]:
    yield triton
    with RepositoryControl(parse_url(triton.grpc_url)) as control:
        try:
            control.unload(NAME)  # the session's server is shared
        except RepositoryError as e:  # never loaded (a bad file): nothing to take away
            if e.kind is not RepositoryErrorKind.NOT_FOUND:
                raise


def test_a_dropped_model_file_is_served_and_its_detections_shown(
    harness: Harness, server: EmbeddedServer, tmp_path: Path
) -> None:
    viewer = harness.viewer(server.grpc_url, "face_detector")
    harness.connected(viewer)
    image = write_png(tmp_path / "astronaut.png", data.astronaut())
    # As the window's drop hands them over: the model file and an image together.
    viewer.open_paths([str(TINY), str(image)])

    def on_tiny() -> bool:
        session = viewer.connection.session
        return session is not None and session.info is not None and session.info.name == NAME

    harness.run(until(on_tiny, what="the file's model connected"))
    assert viewer.model_files.loaded == [NAME]
    session = viewer.connection.session
    assert session is not None and session.info is not None
    assert session.info.profile.labels[:2] == ("blob", "edge"), "class names from the file's metadata"

    # The image again, on the file's model: the records the command line gives for the file.
    viewer.open_paths([str(image)])
    harness.run(until(lambda: viewer.runner.latest_counts() is not None and not viewer.runner.active()))
    exported = tmp_path / "viewer.jsonl"
    viewer.exporter.export_jsonl(True, str(exported))
    harness.run(until(lambda: "exported" in viewer.window.statusBar().currentMessage(), what="export"))
    (shown,) = [json.loads(line) for line in exported.read_text().splitlines()]
    cli = run_cli("infer", "--url", server.grpc_url, "--model", NAME, str(image))
    records, _summary = parse(cli.stdout)
    assert shown["detections"] and {d["label"] for d in shown["detections"]} <= {"blob", "edge"}
    assert [(d["class_id"], d["box"]) for d in shown["detections"]] == [
        (d["class_id"], d["box"]) for d in records[0]["detections"]
    ]


def test_a_bad_model_file_is_named_and_the_model_stays(
    harness: Harness, server: EmbeddedServer, tmp_path: Path
) -> None:
    viewer = harness.viewer(server.grpc_url, "face_detector")
    harness.connected(viewer)
    bad = tmp_path / "broken.onnx"
    bad.write_bytes(TINY.read_bytes()[:600])
    viewer.open_paths([str(bad)])
    harness.run(until(lambda: "broken.onnx" in viewer.window.banner.text(), what="the banner"))
    assert "not an ONNX model, or truncated" in viewer.window.banner.text()
    assert viewer.model_files.loading is None and viewer.model_files.loaded == []
    session = viewer.connection.session
    assert session is not None and session.info is not None and session.info.name == "face_detector"


def test_model_option_with_a_file_loads_it_once_connected(harness: Harness, server: EmbeddedServer) -> None:
    viewer = harness.viewer(server.grpc_url, str(TINY))

    def on_tiny() -> bool:
        session = viewer.connection.session
        return session is not None and session.info is not None and session.info.name == NAME

    harness.run(until(on_tiny, what="the file's model connected"))
    assert viewer.model_files.loaded == [NAME]
