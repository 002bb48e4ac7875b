"""A model file is enough: `--model FILE.onnx` with no server (the embedded one serves it
through the app's Python-backend model) and with `--url` of a running Triton (uploaded through
the repository extension; that server lacks the onnxruntime backend, which is said) give the
same records, and so does the folder `repository save` writes, served by a Triton as it is.
The upload is listed by `repository list` and removed by `repository unload`; bad files are
named with their cause, exit 2, and leave nothing on the server.

The file is the committed tests/model_files/tiny_detector.onnx (YOLOv8 raw layout, dynamic
axes, Ultralytics-style metadata for 64x64)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cv2
import pytest
import skimage.data

from app.inference.introspection.repository import RepositoryControl, RepositoryError, RepositoryErrorKind
from app.inference.model_files import upload
from app.inference.model_files.reading import ModelFileError
from app.inference.model_files.upload import MAX_UPLOAD_BYTES, serve_model_file
from app.inference.protocol import parse_url
from app.server.embedded import EmbeddedServer
from tests.integration.procs import ended_at_exit, eventually, owned_by
from tests.integration.test_cli_infer import bgr, parse, run_cli

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
ROOT = Path(__file__).resolve().parents[2]
FILES = ROOT / "tests" / "model_files"
TINY = FILES / "tiny_detector.onnx"
NAME = "tiny_detector"


@pytest.fixture(scope="module")
def photos(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    folder = tmp_path_factory.mktemp("photos")
    out = []
    for name in ("astronaut", "coffee", "chelsea"):
        path = folder / f"{name}.png"
        cv2.imwrite(str(path), bgr(getattr(skimage.data, name)()))
        out.append(path)
    return out


def _loaded(server: EmbeddedServer) -> set[str]:
    """Every model the server has loaded (its statistics list uploads too) and its index."""
    with RepositoryControl(parse_url(server.grpc_url)) as control:
        return {e.name for e in control.index() if e.ready}


@pytest.fixture
def clean(triton: EmbeddedServer) -> Iterator[EmbeddedServer]:
    """The session's server, with the file's model unloaded after the test (it is shared)."""
    yield triton
    with RepositoryControl(parse_url(triton.grpc_url)) as control:
        try:
            control.unload(NAME)
        except RepositoryError as e:  # already unloaded by the test, or never loaded
            if e.kind is not RepositoryErrorKind.NOT_FOUND:
                raise


def _detections(stdout: str) -> dict[str, list[dict[str, Any]]]:
    records, summary = parse(stdout)
    assert summary["ok"] == summary["total"] == len(records), summary
    return {Path(r["source"]).name: r["detections"] for r in records}


def _same(a: dict[str, list[dict[str, Any]]], b: dict[str, list[dict[str, Any]]]) -> None:
    assert a.keys() == b.keys()
    for source in a:
        assert [(d["class_id"], d["label"]) for d in a[source]] == [
            (d["class_id"], d["label"]) for d in b[source]
        ]
        for da, db in zip(a[source], b[source], strict=True):
            assert da["box"] == pytest.approx(db["box"], abs=0.01) and da["score"] == pytest.approx(
                db["score"], abs=1e-5
            )


def test_a_file_with_no_server_a_running_triton_and_a_saved_folder_give_the_same_records(
    clean: EmbeddedServer, photos: list[Path], tmp_path: Path
) -> None:
    paths = [str(p) for p in photos]
    alone = run_cli("infer", "--model", str(TINY), *paths)
    assert alone.returncode == 0, alone.stderr[-3000:]
    assert f"served as '{NAME}'" in alone.stderr and "onnxruntime backend" not in alone.stderr
    records = _detections(alone.stdout)
    assert any(records.values()), "the tiny detector finds boxes on the photos"
    labels = {d["label"] for found in records.values() for d in found}
    assert labels <= {"blob", "edge"}, "class names from the file's metadata"

    remote = run_cli("infer", "--url", clean.grpc_url, "--model", str(TINY), *paths)
    assert remote.returncode == 0, remote.stderr[-3000:]
    assert (
        f"has no onnxruntime backend: {TINY.name} is served by the app's Python-backend model"
        in remote.stderr
    )
    _same(records, _detections(remote.stdout))

    saved = run_cli("repository", "save", str(TINY), "--to", str(tmp_path / "repo"), "--backend", "python")
    assert saved.returncode == 0, saved.stderr
    with EmbeddedServer(tmp_path / "repo", startup_timeout=180) as served:
        by_hand = run_cli("infer", "--url", served.grpc_url, "--model", NAME, *paths)
    assert by_hand.returncode == 0, by_hand.stderr[-3000:]
    _same(records, _detections(by_hand.stdout))


def test_the_input_size_comes_from_the_files_metadata(clean: EmbeddedServer) -> None:
    done = run_cli("models", "--url", clean.grpc_url, "--model", str(TINY))
    assert done.returncode == 0, done.stderr[-3000:]
    assert NAME in done.stdout and "64x64" in done.stdout, done.stdout


def test_an_upload_over_http_is_listed_and_unloaded_by_the_repository_commands(clean: EmbeddedServer) -> None:
    url = clean.grpc_url
    # Uploaded over HTTP/REST (the files base64 in the JSON body), listed and unloaded over gRPC.
    loaded = run_cli("repository", "--url", f"http://{clean.http_url}", "load", str(TINY))
    assert loaded.returncode == 0 and f"loaded {TINY} as '{NAME}'" in loaded.stderr, loaded.stderr
    listing = run_cli("repository", "--url", url, "list")
    row = next(line for line in listing.stdout.splitlines() if line.startswith(NAME + " "))
    assert "READY" in row and "uploaded" in row, listing.stdout
    unloaded = run_cli("repository", "--url", url, "unload", NAME)
    assert unloaded.returncode == 0, unloaded.stderr
    assert NAME not in _loaded(clean)


@pytest.mark.parametrize(
    ("content", "cause"),
    [
        (b"not a model at all\n", "not an ONNX model, or truncated"),
        (TINY.read_bytes()[:900], "not an ONNX model, or truncated"),
        ((FILES / "unsupported_op.onnx").read_bytes(), "an operator onnxruntime does not know"),
        (None, "2.1 GB is more than one load request can carry"),
    ],
    ids=["not-a-model", "truncated", "unknown-operator", "too-big"],
)
def test_a_bad_file_is_named_exits_2_and_leaves_nothing(
    triton: EmbeddedServer, photos: list[Path], tmp_path: Path, content: bytes | None, cause: str
) -> None:
    bad = tmp_path / "bad_file.onnx"
    if content is None:
        with open(bad, "wb") as f:  # sparse
            f.truncate(MAX_UPLOAD_BYTES + 1)
    else:
        bad.write_bytes(content)
    done = run_cli("infer", "--url", triton.grpc_url, "--model", str(bad), str(photos[0]))
    assert done.returncode == 2, done.stderr
    assert f"model file {bad}: " in done.stderr and cause in done.stderr, done.stderr
    assert done.stdout == ""
    assert "bad_file" not in _loaded(triton)


def test_a_load_the_server_refuses_is_unloaded(
    triton: EmbeddedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server's own failure (here the wrapper's code raises in initialize): the message
    names the file and the server's reason, and no model of that name is left loaded."""
    broken = (
        b"class TritonPythonModel:\n"
        b"    def initialize(self, args):\n"
        b"        raise RuntimeError('wrapper broken on purpose')\n"
    )
    monkeypatch.setattr(upload, "wrapper_code", lambda kind: broken)
    with RepositoryControl(parse_url(triton.grpc_url)) as control:
        with pytest.raises(ModelFileError) as caught:
            serve_model_file(control, TINY, own_backend_first=True)
        with pytest.raises(RepositoryError):
            control.config(NAME)
    message = str(caught.value)
    assert message.startswith(f"model file {TINY}: the server at {triton.grpc_url} could not load it")
    assert "wrapper broken on purpose" in message
    assert NAME not in _loaded(triton)


def test_a_restarted_embedded_server_gets_the_file_again(tmp_path: Path) -> None:
    """The embedded server killed mid-run comes back with its repository's models only: the
    supervisor loads the file's model again, and every record still ends ok."""
    images = 200
    folder = tmp_path / "images"
    folder.mkdir()
    photo = cv2.resize(bgr(skimage.data.astronaut()), (128, 128))
    for i in range(images):
        cv2.imwrite(str(folder / f"img_{i:04d}.png"), photo)
    stderr_file = tmp_path / "stderr.txt"
    argv = ["infer", "--model", str(TINY), "--timeout", "60", "--concurrency", "4", str(folder)]
    with stderr_file.open("w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "app", *argv], cwd=ROOT, stdout=subprocess.PIPE, stderr=err, text=True
        )
    lines: list[str] = []
    first_records = threading.Event()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if len(lines) >= 5:
                first_records.set()
        first_records.set()  # its output ended (it exited): the test need not wait longer

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        with ended_at_exit(proc) as groups:
            first_records.wait(300)
            assert len(lines) >= 5, f"infer wrote {len(lines)} record(s): {stderr_file.read_text()[-3000:]}"
            (server,) = owned_by(proc.pid).groups
            groups.append(server)
            killed_at = len(lines)
            os.kill(server, signal.SIGKILL)
            assert eventually(
                lambda: len(owned_by(proc.pid).groups) == 1 and owned_by(proc.pid).groups != (server,)
            )
            groups.extend(owned_by(proc.pid).groups)
            proc.wait(timeout=600)
            reader.join(timeout=10)
    finally:  # also when it failed: no pipe left to a later test's garbage collection
        assert proc.stdout is not None
        proc.stdout.close()
    stderr = stderr_file.read_text()
    records, summary = parse("".join(lines))
    assert killed_at < images, "the kill came after the run"
    assert [r["error"] for r in records if r["status"] != "ok"][:3] == [], stderr[-3000:]
    assert summary["ok"] == images and proc.returncode == 0, stderr[-2000:]
    assert "runs again at" in stderr and ", but" not in stderr, stderr[-2000:]


def test_a_tflite_file_is_served_by_tflite_runtime(triton: EmbeddedServer, tmp_path: Path) -> None:
    """A TFLite file (the bundled face-mesh network, copied under another name) uploaded with
    the Python-backend model that runs tflite-runtime: loaded, its tensors as the file has them."""
    from app.resources import model_repository

    mesh = tmp_path / "mesh.tflite"
    mesh.write_bytes((model_repository() / "face_landmark" / "1" / "face_landmark.tflite").read_bytes())
    try:
        done = run_cli("models", "--url", triton.grpc_url, "--model", str(mesh))
        assert done.returncode == 0, done.stderr[-3000:]
        assert "mesh (version 1): READY" in done.stdout and "input_1  FP32  [1, 192, 192, 3]" in done.stdout
        assert "max_batch_size: 0" in done.stdout
    finally:
        with RepositoryControl(parse_url(triton.grpc_url)) as control:
            control.unload("mesh")


def test_a_file_named_as_a_bundled_model_is_refused_before_the_server_starts(tmp_path: Path) -> None:
    clash = tmp_path / "face_detector.onnx"
    clash.write_bytes(TINY.read_bytes())
    done = run_cli("infer", "--model", str(clash), str(TINY))
    assert done.returncode == 2
    assert f"--model {clash}: the embedded server has a bundled model named 'face_detector'" in done.stderr
    assert "starting the embedded Triton server" not in done.stderr
