"""Graceful shutdown of a real `specgate serve` process: SIGTERM stops new connections, lets in-flight streams
finish, and the observations of those streams are flushed to the shared store before the process exits."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import redis as sync_redis
import yaml

from tests.conftest import free_port
from tests.fault_upstream import FaultUpstream
from tests.redis_server import RedisServer

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def redis() -> Iterator[RedisServer]:
    server = RedisServer().start()
    yield server
    server.stop()


def test_sigterm_drains_streams_and_flushes_observations(redis: RedisServer, tmp_path: Path) -> None:
    upstream = FaultUpstream("ok", chunk_delay_s=0.15)  # ~2.4 s per stream
    port = free_port()
    config = {
        "server": {"port": port, "shutdown_grace_s": 20},
        "pools": [{"name": "p", "model": "m", "endpoints": [upstream.url]}],
        # No tick during the test: only the shutdown flush can move the observations to Redis.
        "controller": {"tick_s": 3600},
        "state": {"redis_url": redis.url},
        "logging": {"level": "warning"},
    }
    # Another replica leads: this one only pushes its observations (the case where a flush matters most).
    sync_redis.Redis.from_url(redis.url).set("specgate:lease", "other-replica:99", px=600_000)
    path = tmp_path / "gw.yaml"
    path.write_text(yaml.safe_dump(config))
    log = (tmp_path / "gw.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "specgate", "serve", "--config", str(path)],
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=ROOT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)

        async def scenario() -> tuple[list[str], bool]:
            async with httpx.AsyncClient(timeout=30) as http:

                async def stream() -> str:
                    body = {"model": "m", "prompt": "x", "max_tokens": 16, "stream": True}
                    async with http.stream("POST", f"{url}/v1/completions", json=body) as r:
                        return (await r.aread()).decode()

                tasks = [asyncio.create_task(stream()) for _ in range(3)]
                await asyncio.sleep(0.6)  # the streams are flowing
                proc.send_signal(signal.SIGTERM)
                await asyncio.sleep(0.5)
                try:
                    async with httpx.AsyncClient(timeout=2) as fresh:
                        await fresh.get(f"{url}/healthz")
                    refused = False
                except httpx.HTTPError:
                    refused = True
                return list(await asyncio.gather(*tasks)), refused

        bodies, refused = asyncio.run(scenario())
        assert refused, "no new connections once shutting down"
        for text in bodies:
            assert text.rstrip().endswith("data: [DONE]"), text[-200:]
            assert text.count("data: {") == 16, "every chunk of the in-flight stream arrived"
        # uvicorn re-raises the signal once its graceful shutdown is done, so the status says "ended by SIGTERM"
        assert proc.wait(timeout=20) in (0, -signal.SIGTERM)
        assert "Traceback" not in (tmp_path / "gw.log").read_text()
        assert sync_redis.Redis.from_url(redis.url).llen("specgate:obs") == 3, "observations flushed on shutdown"
    finally:
        if proc.poll() is None:
            proc.kill()
        upstream.close()
