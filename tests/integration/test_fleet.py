"""A fleet of servers behind one gRPC target (`--url ipv4:H:P,H:P`), balanced by gRPC's
round_robin: both servers get requests, and a server that dies in the middle of the run costs
no input (what it had in flight is retried on the other). The 3,000-image run of the issue's
"done when" is tests/bench/bench_fleet.py (its --smoke runs in test_bench_smoke.py)."""

from __future__ import annotations

import re
from pathlib import Path

from app.inference.core.open_session import open_session
from app.inference.core.spec import SessionSpec
from app.inference.protocol import parse_endpoints
from tests.cli_runner import run_cli_in_process
from tests.fleet import FLEET_MODEL, Killer, fleet, inference_count, target, write_images
from tests.integration.test_cli_infer import parse

IMAGES = 300
CONCURRENCY = 8


def test_a_fleet_target_balances_and_loses_no_input_when_a_server_dies(tmp_path: Path) -> None:
    images = write_images(tmp_path / "images", IMAGES)
    with fleet(tmp_path) as (dying, surviving):
        url = target([dying, surviving])
        with Killer(dying, after=40, others=[surviving]) as killer:
            run = run_cli_in_process(
                "infer", "--url", url, "--model", FLEET_MODEL, "--concurrency", str(CONCURRENCY), str(images)
            )
        assert killer.killed, "the run ended before the server was killed"
        survivor_served = inference_count(surviving)
    assert run.returncode == 0, run.stderr[-3000:]
    records, summary = parse(run.stdout)
    assert (summary["total"], summary["ok"], summary["failed"]) == (IMAGES, IMAGES, 0)
    assert all(r["ok"] and len(r["detections"]) == 1 for r in records)
    assert {r["server"] for r in records if "server" in r} <= {url}
    # Both servers answered from the start (round_robin; gRPC's default, pick_first, sends
    # everything to the first address until it fails) ...
    assert killer.served_before_kill >= 40 and killer.others_served_before_kill[0] >= 20
    # ... and what the dead one had in flight was sent again, to the other. It may have
    # answered a few more between the killer's last look and the kill (at most what was in
    # flight): those are not sent again.
    assert survivor_served >= IMAGES - killer.served_before_kill - CONCURRENCY
    assert re.search(r"^\d+ request\(s\) sent again after a transient failure", run.stderr, re.M)


def test_statistics_behind_a_fleet_target_are_each_servers_own_summed(tmp_path: Path) -> None:
    """A balanced channel would ask whichever server its next pick is: the figures of two reads
    would be of different servers. They are read server by server and summed."""
    images = write_images(tmp_path / "images", 40)
    with fleet(tmp_path) as servers:
        url = target(servers)
        run = run_cli_in_process("infer", "--url", url, "--model", FLEET_MODEL, str(images))
        assert run.returncode == 0, run.stderr[-2000:]
        served = [inference_count(server) for server in servers]
        spec = SessionSpec(endpoints=parse_endpoints(url), model=FLEET_MODEL)
        with open_session(spec) as session:
            counters = session.read_server_counters()
        # A DNS name (as a Kubernetes headless service is given): `localhost` resolves here.
        by_name = run_cli_in_process(
            "infer", "--url", f"dns:///localhost:{servers[0].grpc_port}", "--model", FLEET_MODEL, str(images)
        )
    assert all(n > 0 for n in served) and sum(served) == 40  # both served (round_robin)
    assert counters.inferences == 40 and "server_queue_ms" in parse(run.stdout)[1]["timing"]
    assert by_name.returncode == 0 and parse(by_name.stdout)[1]["ok"] == 40, by_name.stderr[-2000:]
