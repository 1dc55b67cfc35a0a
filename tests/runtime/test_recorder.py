"""The workload record (runtime/recorder.py): lines carry what the controller learns from and no text, the file
rotates within its bounds, nothing waiting is lost at shutdown, a writer that falls behind drops the oldest
(counted)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import httpx
import orjson
import pytest
from specgate.controllers.observations import Observation, SpecStats
from specgate.runtime.recorder import WorkloadRecorder

from tests.conftest import GatewayServer
from tests.fault_upstream import FaultUpstream


def _obs(route: str = "code", k: int = 3) -> Observation:
    spec = SpecStats(12, 8, 5, (1, 1, 0, 3), ((3, (1, 1, 0, 3)),))
    return Observation(route, "p", "http://e:1", k, "engine", spec, 40, 17, 0.05, 0.3, 2.0, True, 0.4, True)


def test_lines_carry_the_figures_and_the_tenant(tmp_path: Path) -> None:
    rec = WorkloadRecorder(tmp_path / "r.jsonl", 1 << 20, 1)
    rec.add(_obs(), "acme")
    asyncio.run(rec.stop())
    (line,) = [orjson.loads(x) for x in (tmp_path / "r.jsonl").read_bytes().splitlines()]
    assert line["route"] == "code" and line["tenant"] == "acme" and line["k"] == 3 and line["scheduled"] is True
    assert line["histogram"] == [1, 1, 0, 3] and line["by_k"] == [[3, [1, 1, 0, 3]]]
    assert (line["prompt_tokens"], line["completion_tokens"], line["batch"]) == (40, 17, 2.0)


def test_the_file_rotates_within_its_bounds(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    rec = WorkloadRecorder(path, 4096, 2)

    async def write() -> None:
        for _ in range(60):
            for _ in range(10):
                rec.add(_obs(), None)
            await rec.flush()

    asyncio.run(write())
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["r.jsonl", "r.jsonl.1", "r.jsonl.2"]
    assert all((tmp_path / f).stat().st_size <= 4096 for f in files)
    assert rec.written == 600


def test_a_writer_that_falls_behind_drops_the_oldest_and_counts(tmp_path: Path) -> None:
    dropped: list[int] = []
    rec = WorkloadRecorder(tmp_path / "r.jsonl", 1 << 20, 0, buffer=5, on_drop=lambda: dropped.append(1))
    for i in range(8):
        rec.add(_obs(route=f"r{i}"), None)
    asyncio.run(rec.flush())
    routes = [orjson.loads(x)["route"] for x in (tmp_path / "r.jsonl").read_bytes().splitlines()]
    assert routes == ["r3", "r4", "r5", "r6", "r7"] and len(dropped) == 3


def test_a_gateway_records_each_request_without_its_text(
    tmp_path: Path, start_gateway: Callable[..., GatewayServer]
) -> None:
    upstream = FaultUpstream("ok")
    path = tmp_path / "records.jsonl"
    try:
        gw = start_gateway(
            [{"name": "p", "model": "m", "endpoints": [upstream.url]}],
            recording={"enabled": True, "path": str(path)},
        )
        secret = "my very private prompt text"
        for _ in range(3):
            body = {"model": "m", "messages": [{"role": "user", "content": secret}]}
            assert httpx.post(f"{gw.url}/v1/chat/completions", json=body, timeout=10).status_code == 200
    finally:
        upstream.close()
    gw.stop()  # the last lines are flushed at shutdown
    raw = path.read_bytes()
    assert len(raw.splitlines()) == 3 and secret.encode() not in raw


def test_a_folder_that_cannot_take_the_record_is_a_config_error(tmp_path: Path) -> None:
    from specgate.config import ConfigError, validate_config

    with pytest.raises(ConfigError, match="does not exist"):
        validate_config({"recording": {"enabled": True, "path": str(tmp_path / "missing" / "r.jsonl")}})
    validate_config({"recording": {"enabled": False, "path": str(tmp_path / "missing" / "r.jsonl")}})
