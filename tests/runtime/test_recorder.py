"""The workload record (runtime/recorder.py, backends/record_stream.py): lines carry what the controller learns from
and no text, the file rotates within its bounds, nothing waiting is lost at shutdown, a writer that falls behind drops
the oldest (counted), a batch the sink refuses is sent again; the Redis stream sink on a real Redis."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import orjson
import pytest
from specgate.backends.record_stream import RedisStreamSink, read_all, stream_key
from specgate.backends.state_store import redis_client
from specgate.controllers.observations import Observation, SpecStats
from specgate.gateway.cli import main
from specgate.offline.advisor import parse_records
from specgate.runtime.recorder import FileSink, WorkloadRecorder

from tests.conftest import GatewayServer
from tests.fault_upstream import FaultUpstream
from tests.offline.test_advisor import _records
from tests.redis_server import RedisServer


def _obs(route: str = "code", k: int = 3) -> Observation:
    spec = SpecStats(12, 8, 5, (1, 1, 0, 3), ((3, (1, 1, 0, 3)),))
    return Observation(route, "p", "http://e:1", k, "engine", spec, 40, 17, 0.05, 0.3, 2.0, True, 0.4, True)


def test_lines_carry_the_figures_and_the_tenant(tmp_path: Path) -> None:
    rec = WorkloadRecorder(FileSink(tmp_path / "r.jsonl", 1 << 20, 1))
    rec.add(_obs(), "acme")
    asyncio.run(rec.stop())
    (line,) = [orjson.loads(x) for x in (tmp_path / "r.jsonl").read_bytes().splitlines()]
    assert line["route"] == "code" and line["tenant"] == "acme" and line["k"] == 3 and line["scheduled"] is True
    assert line["histogram"] == [1, 1, 0, 3] and line["by_k"] == [[3, [1, 1, 0, 3]]]
    assert (line["prompt_tokens"], line["completion_tokens"], line["batch"]) == (40, 17, 2.0)


def test_the_file_rotates_within_its_bounds(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    rec = WorkloadRecorder(FileSink(path, 4096, 2))

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
    rec = WorkloadRecorder(FileSink(tmp_path / "r.jsonl", 1 << 20, 0), buffer=5, on_drop=lambda: dropped.append(1))
    for i in range(8):
        rec.add(_obs(route=f"r{i}"), None)
    asyncio.run(rec.flush())
    routes = [orjson.loads(x)["route"] for x in (tmp_path / "r.jsonl").read_bytes().splitlines()]
    assert routes == ["r3", "r4", "r5", "r6", "r7"] and len(dropped) == 3


def test_a_gateway_records_each_request_without_its_text(
    tmp_path: Path, start_gateway: Callable[..., GatewayServer]
) -> None:
    path = tmp_path / "records.jsonl"
    _three_private_requests(start_gateway, recording={"enabled": True, "path": str(path)})
    raw = path.read_bytes()
    assert len(raw.splitlines()) == 3 and SECRET.encode() not in raw


SECRET = "my very private prompt text"


def _three_private_requests(start_gateway: Callable[..., GatewayServer], **sections: dict) -> None:
    """Three requests carrying SECRET through a gateway with `sections`, then the gateway stopped (which flushes)."""
    upstream = FaultUpstream("ok")
    try:
        gw = start_gateway([{"name": "p", "model": "m", "endpoints": [upstream.url]}], **sections)
        for _ in range(3):
            body = {"model": "m", "messages": [{"role": "user", "content": SECRET}]}
            assert httpx.post(f"{gw.url}/v1/chat/completions", json=body, timeout=10).status_code == 200
    finally:
        upstream.close()
    gw.stop()


def test_a_folder_that_cannot_take_the_record_is_a_config_error(tmp_path: Path) -> None:
    from specgate.config import ConfigError, validate_config

    with pytest.raises(ConfigError, match="does not exist"):
        validate_config({"recording": {"enabled": True, "path": str(tmp_path / "missing" / "r.jsonl")}})
    validate_config({"recording": {"enabled": False, "path": str(tmp_path / "missing" / "r.jsonl")}})


def _routes(raw: bytes) -> list[str]:
    return [orjson.loads(x)["route"] for x in raw.splitlines()]


def test_a_batch_the_sink_refuses_is_sent_again_within_the_bound(tmp_path: Path) -> None:
    folder = tmp_path / "later"  # missing: every write fails (a real OSError) until it exists
    dropped: list[int] = []
    rec = WorkloadRecorder(FileSink(folder / "r.jsonl", 1 << 20, 0), buffer=5, on_drop=lambda: dropped.append(1))

    async def run() -> None:
        for i in range(3):
            rec.add(_obs(route=f"r{i}"), None)
        await rec.flush()
        assert rec.written == 0 and not dropped
        for i in range(3, 7):
            rec.add(_obs(route=f"r{i}"), None)
        await rec.flush()  # 7 lines for 5 places: the two oldest go, counted
        folder.mkdir()
        await rec.flush()

    asyncio.run(run())
    assert _routes((folder / "r.jsonl").read_bytes()) == ["r2", "r3", "r4", "r5", "r6"]
    assert len(dropped) == 2 and rec.written == 5


def test_lines_a_sink_still_refuses_at_shutdown_are_counted(tmp_path: Path) -> None:
    dropped: list[int] = []
    rec = WorkloadRecorder(FileSink(tmp_path / "missing" / "r.jsonl", 1 << 20, 0), on_drop=lambda: dropped.append(1))
    for _ in range(3):
        rec.add(_obs(), None)
    asyncio.run(rec.stop())
    assert len(dropped) == 3 and rec.written == 0


@pytest.fixture
def redis() -> Iterator[RedisServer]:
    server = RedisServer().start()
    yield server
    server.stop()


def test_the_stream_sink_survives_redis_going_away_and_stays_bounded(redis: RedisServer) -> None:
    async def run() -> int:
        rec = WorkloadRecorder(RedisStreamSink(redis_client(redis.url, 0.5), "t:records", 100))
        rec.add(_obs(route="before"), None)
        await rec.flush()
        redis.stop()
        rec.add(_obs(route="while-down"), None)
        await rec.flush()  # refused: kept
        down = rec.written
        redis.start()  # the same port, an empty Redis
        await rec.flush()
        for i in range(2000):
            rec.add(_obs(route=f"r{i}"), None)
        await rec.stop()
        return down

    assert asyncio.run(run()) == 1
    lines = read_all(redis.url, "t:records")
    # MAXLEN ~ 100 trims whole nodes (100 entries each by default): the stream keeps the newest 100-200.
    assert 100 <= len(lines) <= 200
    assert orjson.loads(lines[-1])["route"] == "r1999"


def test_a_gateway_records_to_the_stream_and_advise_reads_it(
    redis: RedisServer, start_gateway: Callable[..., GatewayServer], capsys: pytest.CaptureFixture[str]
) -> None:
    _three_private_requests(
        start_gateway,
        recording={"enabled": True, "sink": "redis"},
        state={"redis_url": redis.url, "namespace": "gw1"},
    )
    lines = read_all(redis.url, stream_key("gw1"))
    assert len(parse_records(lines)[0]) == 3 and all(SECRET.encode() not in line for line in lines)

    # A record of known acceptance, written through the sink, read back by `specgate advise --from redis://`.
    async def write() -> None:
        sink = RedisStreamSink(redis_client(redis.url, 2.0), "gw2:records", 100_000)
        await sink.write([orjson.dumps(r) + b"\n" for r in _records(30)])
        await sink.close()

    asyncio.run(write())
    capsys.readouterr()
    assert main(["advise", "--from", redis.url, "--stream", "gw2:records", "--seeds", "1"]) == 0
    out = capsys.readouterr().out
    assert "code" in out and "chat" in out
    assert main(["advise", "--from", "redis://127.0.0.1:9/0", "--stream", "gw2:records"]) == 2
    assert "cannot read the record stream" in capsys.readouterr().err


def test_a_stream_needs_a_redis(tmp_path: Path) -> None:
    from specgate.config import ConfigError, validate_config

    with pytest.raises(ConfigError, match=r"state\.redis_url is not set"):
        validate_config({"recording": {"enabled": True, "sink": "redis"}})
    # The file sink's folder is not checked for a stream.
    validate_config(
        {
            "recording": {"enabled": True, "sink": "redis", "path": str(tmp_path / "missing" / "r")},
            "state": {"redis_url": "redis://127.0.0.1:6379/0"},
        }
    )
