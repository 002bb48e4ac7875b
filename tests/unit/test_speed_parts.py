"""Pure parts of the speed work: the knee of a load sweep, the client batcher, the server's
time split from Triton's statistics, loopback detection, the shared-memory region."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from app.inference.core.batcher import ClientBatcher
from app.inference.core.stats import TimingTotals
from app.inference.core.transport_choice import is_loopback
from app.inference.introspection.server_stats import parse_counters, split
from app.inference.protocol import parse_url
from app.inference.result import RequestTiming
from app.inference.transports.shm import ShmRegion
from app.pipeline.sweep import LevelResult, SweepPlan, find_knee, recommend


def level(c: int, throughput: float, p95: float, transport: str = "shm", batch: int = 1) -> LevelResult:
    return LevelResult(c, transport, batch, throughput, p95 / 2, p95, p95 * 1.2, 0, 1.0, 2.0)


def test_the_knee_is_where_throughput_stops_growing_while_p95_rises() -> None:
    levels = [level(1, 100, 10), level(2, 190, 11), level(4, 300, 14), level(8, 310, 26), level(16, 312, 50)]
    knee = find_knee(levels)
    assert knee is not None and knee.concurrency == 4
    # Still growing at the top: no knee; the recommendation says to try higher.
    growing = [level(1, 100, 10), level(2, 200, 11), level(4, 390, 12)]
    assert find_knee(growing) is None
    best, sentence = recommend(growing)
    assert best is not None and best.concurrency == 4 and "try higher" in sentence
    # Throughput flat but latency flat too (no queueing yet): not a knee.
    assert find_knee([level(1, 100, 10), level(2, 101, 10)]) is None


def test_the_recommendation_picks_the_best_series_at_its_knee() -> None:
    grpc = [level(1, 80, 10, "grpc"), level(2, 150, 11, "grpc"), level(4, 152, 20, "grpc")]
    shm = [level(1, 100, 8), level(2, 200, 9), level(4, 260, 10), level(8, 262, 18)]
    best, sentence = recommend(grpc + shm)
    assert best is not None and (best.transport, best.concurrency) == ("shm", 4)
    assert "latency rises while throughput hardly grows" in sentence and "4 in flight" in sentence


def test_the_plan_counts_every_request() -> None:
    plan = SweepPlan(levels=(1, 4), client_batches=(1, 8), requests=100)
    assert len(plan.steps()) == 4
    assert plan.total_requests() == 2 * (100 + 10 + 100 + 10)


def test_the_batcher_flushes_full_batches_at_once_and_the_rest_on_the_timer() -> None:
    flushed: list[list[int]] = []
    timers: list[tuple[float, object]] = []

    def schedule(delay: float, fn: object) -> bool:
        timers.append((delay, fn))
        return True

    batcher: ClientBatcher[int] = ClientBatcher(3, 0.005, flushed.append, schedule)
    for i in range(4):
        batcher.add("640x640", i)
    batcher.add("320x240", 99)  # another shape: its own batch
    assert flushed == [[0, 1, 2]]
    assert [d for d, _ in timers] == [0.005, 0.005, 0.005]
    for _, fn in timers:
        fn()  # type: ignore[operator]
    # The first timer belonged to the batch already sent full: it does nothing.
    assert flushed == [[0, 1, 2], [3], [99]]
    batcher.add("640x640", 5)
    batcher.close()
    assert flushed[-1] == [5]
    batcher.add("640x640", 6)  # after close: alone, at once
    assert flushed[-1] == [6]


def test_the_batcher_hands_each_item_on_exactly_once_under_threads() -> None:
    flushed: list[list[int]] = []
    lock = threading.Lock()

    def flush(items: list[int]) -> None:
        with lock:
            flushed.append(items)

    def schedule(delay: float, fn: object) -> bool:
        threading.Timer(delay, fn).start()  # type: ignore[arg-type]
        return True

    batcher: ClientBatcher[int] = ClientBatcher(4, 0.002, flush, schedule)
    threads = [
        threading.Thread(target=lambda k=k: [batcher.add(k % 3, k * 100 + i) for i in range(50)])
        for k in range(6)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    batcher.close()
    items = sorted(i for batch in flushed for i in batch)
    assert items == sorted(k * 100 + i for k in range(6) for i in range(50))
    assert max(len(b) for b in flushed) <= 4


def test_server_split_from_two_reads() -> None:
    def stats(count: int, queue: int, infer: int, executions: int, inferences: int) -> dict[str, object]:
        return {
            "model_stats": [
                {
                    "name": "m",
                    "version": "1",
                    "execution_count": str(executions),
                    "inference_count": str(inferences),
                    "inference_stats": {
                        "success": {"count": str(count), "ns": str(queue + infer + 1000 * count)},
                        "queue": {"count": str(count), "ns": str(queue)},
                        "compute_infer": {"count": str(count), "ns": str(infer)},
                    },
                },
                {"name": "other", "inference_stats": {"success": {"count": "99"}}},
            ]
        }

    before = parse_counters(stats(10, 5_000_000, 20_000_000, 5, 10), "m")
    after = parse_counters(stats(30, 25_000_000, 80_000_000, 10, 30), "m")
    result = split(before, after)
    assert result is not None and result.requests == 20
    assert result.queue_ms == pytest.approx(1.0) and result.compute_infer_ms == pytest.approx(3.0)
    assert result.compute_input_ms == 0.0 and result.batch_size == pytest.approx(4.0)
    assert result.total_ms == pytest.approx(4.001)
    assert split(after, after) is None


def test_timing_totals_are_means_per_request() -> None:
    totals = TimingTotals()
    assert totals.means() is None
    totals.add(RequestTiming(1.0, 2.0, 10.0, 0.5, batch=1))
    totals.add(RequestTiming(3.0, 0.0, 20.0, 1.5, batch=3))
    totals.add(None)
    means = totals.means()
    assert means is not None and means.requests == 2
    assert (means.preprocess_ms, means.round_trip_ms, means.batch) == (2.0, 15.0, 2.0)
    assert means.to_record()["client_postprocess_ms"] == 1.0


@pytest.mark.parametrize(
    ("url", "local"),
    [
        ("127.0.0.1:8001", True),
        ("localhost:8001", True),
        ("[::1]:8001", True),
        ("127.0.1.1:8001", True),
        ("10.0.0.5:8001", False),
        ("triton.example.com:8001", False),
        ("[2001:db8::1]:8001", False),
    ],
)
def test_loopback_addresses(url: str, local: bool) -> None:
    assert is_loopback(parse_url(url)) is local
    assert parse_url("localhost:8001").host == "localhost"


def test_a_region_holds_what_is_written_and_disappears_on_close() -> None:
    region = ShmRegion(4096)
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    assert region.write(data, offset=64) == data.nbytes
    back = region.read(np.dtype(np.float32), (3, 4), offset=64)
    assert np.array_equal(back, data)
    back[0, 0] = 99  # a copy: the region is reused by the next request
    assert region.read(np.dtype(np.float32), (3, 4), offset=64)[0, 0] == 0
    assert region.path.exists() and region.key == f"/{region.name}"
    region.close()
    region.close()  # idempotent
    assert not region.path.exists()
