"""Soak: many concurrent streaming clients through a `specgate serve` process against the fault-free fake
upstream, each in its own process. Reports errors, per-window p50/p99 stream time and the gateway's RSS.

    python bench/soak.py --clients 1000 --seconds 600 --out bench/results/soak-1000x600.json
    python bench/soak.py --clients 100 --seconds 30            # the short form the tests run

Every client loops: one streaming completion (16 chunks, the upstream waits `--chunk-delay-s` between chunks),
read to `[DONE]`, repeat. The client is a minimal raw-asyncio HTTP/1.1 reader, so the load generator is cheap
next to the gateway it measures. An error = a non-200 answer, a stream without `[DONE]`, or a socket error.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BODY = json.dumps({"model": "m", "prompt": "soak", "max_tokens": 16, "stream": True}).encode()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _wait_port(port: int, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing listens on {port}")


async def _client(port: int, deadline: float, samples: list[tuple[float, float]], errors: list[str]) -> None:
    request = (
        b"POST /v1/completions HTTP/1.1\r\nhost: soak\r\ncontent-type: application/json\r\n"
        b"content-length: %d\r\n\r\n" % len(BODY) + BODY
    )
    reader = writer = None
    while time.monotonic() < deadline:
        started = time.monotonic()
        try:
            if writer is None:
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            if not head.startswith(b"HTTP/1.1 200"):
                errors.append(head.split(b"\r\n", 1)[0].decode())
                writer.close()
                reader = writer = None
                continue
            body = await reader.readuntil(b"0\r\n\r\n")
            if b"[DONE]" not in body:
                errors.append("stream without [DONE]")
            samples.append((started, time.monotonic() - started))
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError) as exc:
            errors.append(type(exc).__name__)
            if writer is not None:
                writer.close()
            reader = writer = None
            await asyncio.sleep(0.05)
    if writer is not None:
        writer.close()


def run(clients: int, seconds: float, chunk_delay_s: float, window_s: float) -> dict[str, Any]:
    up_port, gw_port = _free_port(), _free_port()
    upstream = subprocess.Popen(
        [sys.executable, "-m", "tests.fault_upstream", "--port", str(up_port), "--chunk-delay-s", str(chunk_delay_s)],
        cwd=ROOT,
    )
    config = Path(tempfile.mkstemp(suffix=".yaml", prefix="specgate-soak-")[1])
    config.write_text(
        json.dumps(
            {
                "server": {"port": gw_port, "max_concurrent_requests": clients * 2},
                "pools": [{"name": "p", "model": "m", "endpoints": [f"http://127.0.0.1:{up_port}"]}],
                "health": {"interval_s": 5},
                "logging": {"level": "error"},
            }
        )
    )
    gateway = subprocess.Popen([sys.executable, "-m", "specgate", "serve", "--config", str(config)], cwd=ROOT)
    try:
        _wait_port(up_port)
        _wait_port(gw_port)
        samples: list[tuple[float, float]] = []
        errors: list[str] = []
        rss: list[tuple[float, float]] = []

        async def main() -> None:
            start = time.monotonic()
            deadline = start + seconds

            async def watch() -> None:
                while time.monotonic() < deadline:
                    rss.append((time.monotonic() - start, _rss_mib(gateway.pid)))
                    await asyncio.sleep(min(5.0, seconds / 10))

            await asyncio.gather(watch(), *(_client(gw_port, deadline, samples, errors) for _ in range(clients)))

        t0 = time.monotonic()
        asyncio.run(main())
        return _report(clients, seconds, chunk_delay_s, window_s, t0, samples, errors, rss)
    finally:
        for proc in (gateway, upstream):
            proc.terminate()
            proc.wait(timeout=30)
        config.unlink(missing_ok=True)


def _report(
    clients: int,
    seconds: float,
    chunk_delay_s: float,
    window_s: float,
    t0: float,
    samples: list[tuple[float, float]],
    errors: list[str],
    rss: list[tuple[float, float]],
) -> dict[str, Any]:
    windows = []
    for w in range(int(seconds // window_s)):
        durations = sorted(d for s, d in samples if w * window_s <= s - t0 < (w + 1) * window_s)
        if durations:
            windows.append(
                {
                    "from_s": w * window_s,
                    "streams": len(durations),
                    "p50_ms": round(1000 * durations[len(durations) // 2], 1),
                    "p99_ms": round(1000 * durations[min(len(durations) - 1, int(0.99 * len(durations)))], 1),
                }
            )
    steady = windows[1:] or windows  # the first window includes connection set-up
    after_warmup = [m for t, m in rss if t >= window_s] or [m for _, m in rss]
    return {
        "clients": clients,
        "seconds": seconds,
        "chunk_delay_s": chunk_delay_s,
        "streams": len(samples),
        "streams_per_s": round(len(samples) / seconds, 1),
        "errors": len(errors),
        "error_kinds": sorted(set(errors))[:10],
        "windows": windows,
        "p99_ms_first_last": [steady[0]["p99_ms"], steady[-1]["p99_ms"]] if steady else None,
        "p99_ms_median": statistics.median(w["p99_ms"] for w in steady) if steady else None,
        "rss_mib": {
            "after_warmup": round(after_warmup[0], 1) if after_warmup else None,
            "end": round(rss[-1][1], 1) if rss else None,
            "max": round(max(m for _, m in rss), 1) if rss else None,
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=600)
    parser.add_argument("--chunk-delay-s", type=float, default=0.02)
    parser.add_argument("--window-s", type=float, default=30)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    report = run(args.clients, args.seconds, args.chunk_delay_s, min(args.window_s, args.seconds / 3))
    text = json.dumps(report, indent=1)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
    return 0 if report["errors"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
