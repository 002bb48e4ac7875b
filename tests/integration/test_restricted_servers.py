"""Current Triton's guarded calls, through proxies in front of the tests' real server that
answer as such a server would (tests/grpc_servers.py, tests/http_proxy.py; texts and statuses
from the server's own source):
- Triton 2.69+ refuses client shared memory unless started with --allow-client-shm=true: the
  run falls back to the messages and says so once, naming the flag;
- restricted protocols (--grpc-restricted-protocol / --http-restricted-api, as PyTriton starts
  its server) answer the admin calls only with a header: --restricted-header (or a
  `restricted KEY=VALUE` line of --header-file) is sent on those calls, never on inference,
  and a refusal names what to give."""

from __future__ import annotations

from pathlib import Path

from app.resources import sample_image
from app.server.embedded import EmbeddedServer
from tests.cli_runner import run_cli_in_process
from tests.grpc_servers import TritonLikeRules, triton_like_proxy
from tests.http_proxy import http_proxy
from tests.integration.test_cli_infer import parse

ADMIN = ("shared-memory", "model-repository", "statistics", "trace")
KEY, VALUE = "admin-key", "s3cret-admin"
ADMIN_METHODS = {"SystemSharedMemoryRegister", "ModelConfig", "ModelStatistics"}


def restricted(*more: str) -> dict[str, tuple[str, str]]:
    return dict.fromkeys((*ADMIN, *more), (KEY, VALUE))


def infer(url: str, *extra: str) -> tuple[list[dict], dict, str]:
    run = run_cli_in_process(
        "infer", "--url", url, "--model", "face_detector", "--transport", "shm", *extra, str(sample_image())
    )
    assert run.returncode == 0, run.stderr[-3000:]
    records, summary = parse(run.stdout)
    assert [r["status"] for r in records] == ["ok"] and records[0]["detections"]
    return records, summary, run.stderr


def test_grpc_a_server_without_allow_client_shm_gets_the_messages_and_one_note(
    triton: EmbeddedServer,
) -> None:
    with triton_like_proxy(triton.grpc_url, TritonLikeRules(allow_client_shm=False)) as (url, rules):
        _, summary, stderr = infer(url)
    assert summary["transport"] == "grpc"
    assert stderr.count("--allow-client-shm") == 1, stderr
    assert "SystemSharedMemoryRegister" in rules.methods() and "ModelInfer" in rules.methods()


def test_grpc_restricted_admin_calls_refused_without_the_header_name_it(triton: EmbeddedServer) -> None:
    with triton_like_proxy(triton.grpc_url, TritonLikeRules(restricted=restricted())) as (url, _):
        listing = run_cli_in_process("repository", "--url", url, "list")
        _, summary, stderr = infer(url)
    assert listing.returncode != 0
    for text in (listing.stderr, stderr):
        assert f"--restricted-header {KEY}=VALUE" in text and "--grpc-restricted-protocol" in text, text
    assert summary["transport"] == "grpc"  # shared memory refused: the messages
    assert "server_queue_ms" not in summary["timing"]  # statistics refused


def test_grpc_a_restricted_model_config_stops_the_run_naming_the_header(triton: EmbeddedServer) -> None:
    with triton_like_proxy(triton.grpc_url, TritonLikeRules(restricted=restricted("model-config"))) as (
        url,
        _,
    ):
        run = run_cli_in_process("infer", "--url", url, "--model", "face_detector", str(sample_image()))
    assert run.returncode == 2 and f"--restricted-header {KEY}=VALUE" in run.stderr, run.stderr
    assert "cannot reach" not in run.stderr  # gRPC's UNAVAILABLE, but not an outage: not retried


def test_grpc_the_restricted_header_goes_on_admin_calls_only(triton: EmbeddedServer, tmp_path: Path) -> None:
    header_file = tmp_path / "headers"
    header_file.write_text(f"x-tenant=blue\nrestricted {KEY}={VALUE}\n")
    rules = TritonLikeRules(restricted=restricted("model-config"))
    with triton_like_proxy(triton.grpc_url, rules) as (url, _):
        listing = run_cli_in_process("repository", "--url", url, "--header-file", str(header_file), "list")
        _, summary, stderr = infer(url, "--header-file", str(header_file))
    assert listing.returncode == 0 and "face_detector" in listing.stdout, listing.stderr
    assert summary["transport"] == "shm" and "server_queue_ms" in summary["timing"], stderr
    assert VALUE not in stderr
    assert ADMIN_METHODS | {"RepositoryIndex"} <= rules.methods_with(KEY)
    assert "ModelInfer" in rules.methods_with("x-tenant") and "ModelInfer" not in rules.methods_with(KEY)


def test_http_restricted_and_without_client_shm(triton: EmbeddedServer) -> None:
    with http_proxy(triton.http_port) as proxy:
        proxy.rules.allow_client_shm, proxy.rules.restricted = False, restricted()
        _, refused, refused_err = infer(proxy.url)
        _, summary, stderr = infer(proxy.url, "--restricted-header", f"{KEY}={VALUE}")
        sent = list(proxy.rules.headers)
    assert "--http-restricted-api" in refused_err and f"--restricted-header {KEY}=VALUE" in refused_err
    assert "server_queue_ms" not in refused["timing"]
    # With the header: statistics read; shared memory still refused (no --allow-client-shm).
    assert summary["transport"] != "shm" and "server_queue_ms" in summary["timing"], stderr
    assert stderr.count("--allow-client-shm") == 1, stderr
    keyed = {path for path, headers in sent if headers.get(KEY) == VALUE}
    assert any(p.endswith("/stats") for p in keyed) and any("sharedmemory" in p for p in keyed)
    assert not any(p.endswith("/infer") for p in keyed)
