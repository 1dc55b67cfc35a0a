"""/metrics of several workers on one port (runtime/worker_metrics.py): merged, labelled by slot, dead ones dropped."""

from __future__ import annotations

import asyncio
from pathlib import Path

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.parser import text_string_to_metric_families
from specgate.runtime.worker_metrics import WorkerMetrics, merge_expositions


def _registry(requests: int, k: float, latencies: list[float]) -> CollectorRegistry:
    r = CollectorRegistry()
    Counter("specgate_requests", "Requests.", ["route"], registry=r).labels("code").inc(requests)
    Gauge("specgate_route_k", "k.", ["route"], registry=r).labels("code").set(k)
    h = Histogram("specgate_request_duration_seconds", "Duration.", buckets=(0.1, 1.0), registry=r)
    for x in latencies:
        h.observe(x)
    return r


def _samples(text: bytes) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text.decode())
        for s in family.samples
        if not s.name.endswith("_created")
    }


def test_merged_exposition_labels_every_sample_by_worker_and_keeps_the_families_whole() -> None:
    from prometheus_client import generate_latest

    a = generate_latest(_registry(3, 2, [0.05, 0.5])).decode()
    b = generate_latest(_registry(5, 0, [2.0])).decode()
    merged = merge_expositions([("0", a), ("1", b)])
    samples = _samples(merged)
    assert samples[("specgate_requests_total", (("route", "code"), ("worker", "0")))] == 3
    assert samples[("specgate_requests_total", (("route", "code"), ("worker", "1")))] == 5
    assert samples[("specgate_route_k", (("route", "code"), ("worker", "1")))] == 0
    assert samples[("specgate_request_duration_seconds_bucket", (("le", "1.0"), ("worker", "0")))] == 2
    assert samples[("specgate_request_duration_seconds_count", (("worker", "1"),))] == 1
    # One HELP/TYPE per family, as Prometheus requires.
    assert merged.decode().count("# TYPE specgate_requests_total counter") == 1
    assert merged.decode().count("# TYPE specgate_request_duration_seconds histogram") == 1


def test_workers_see_each_other_and_a_stopped_one_drops_out(tmp_path: Path) -> None:
    async def main() -> None:
        one = WorkerMetrics(tmp_path, _registry(1, 1, []), slots=2, interval_s=0.05)
        two = WorkerMetrics(tmp_path, _registry(7, 3, []), slots=2, interval_s=0.05)
        assert {one.slot, two.slot} == {"0", "1"}
        one.start()
        two.start()
        await asyncio.sleep(0.2)
        seen = _samples(one.exposition())
        assert seen[("specgate_requests_total", (("route", "code"), ("worker", two.slot)))] == 7
        assert seen[("specgate_requests_total", (("route", "code"), ("worker", one.slot)))] == 1
        # A worker that dies leaves its file behind but not its lock (the kernel drops it with the process).
        assert two._task is not None and two._lock is not None
        two._task.cancel()
        two._lock.close()
        assert (tmp_path / f"slot-{two.slot}.prom").exists()
        assert not any(dict(labels).get("worker") == two.slot for _, labels in _samples(one.exposition()))
        # Its slot is free again: a replacement worker takes it (label values stay bounded).
        three = WorkerMetrics(tmp_path, _registry(0, 0, []), slots=2)
        assert three.slot == two.slot
        await three.stop()
        await one.stop()

    asyncio.run(main())
