"""Gateway overhead: direct-to-upstream vs specgate vs LiteLLM proxy vs vllm-router, in one run on this machine.

    python bench/overhead.py --out bench/results/overhead.json            # all four targets
    python bench/overhead.py --targets direct,specgate --seconds 5         # quick look
    python bench/overhead.py --targets direct,specgate-redis,specgate-w2,specgate-w2-2cpu   # --workers 1 vs 2

A fake OpenAI-compatible upstream (tests/fault_upstream.py, mode ok: a fixed JSON answer, or 16 SSE chunks) runs in
its own process. Each gateway runs alone, pinned to CPU 0 with `taskset`; the upstream and the closed-loop load
generator share CPU 1. LiteLLM and vllm-router are installed by this script into their own virtual environments
under `.bench-venvs/` (first run only). Per target, concurrency (1, 32, 128) and kind (non-streaming, streaming):
`--seconds` of closed-loop load, repeated `--repeats` times; medians are reported. With `--interleave` every target
runs at once and they take turns at each cell, order reversed every repeat (for comparing two builds of the same
gateway: the machine's drift then falls on both). Figures:

- p50 / p99 latency (streams: time to the last byte) and, for streams, time to first byte;
- requests/s, and the ratio to direct at the same concurrency;
- gateway CPU per request = (utime + stime of the gateway process over the run) / requests, and req/s per core.

specgate runs with classification (a route rule on classifier labels), k shaping (a pool taking per-request k) and
observation capture on, as in production.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
VENVS = ROOT / ".bench-venvs"
TICKS = os.sysconf("SC_CLK_TCK")
PACKAGES = {"litellm": ["litellm[proxy]"], "vllm-router": ["vllm-router"]}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, proc: subprocess.Popen | None = None, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"nothing listens on {port}")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    total = (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime
    for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
        total += cpu_seconds(int(child))  # worker processes (LiteLLM, uvicorn workers)
    return total


def pinned(cpu: str) -> list[str]:
    return ["taskset", "-c", cpu] if shutil.which("taskset") else []


def venv_python(name: str) -> Path:
    python = VENVS / name / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENVS / name)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *PACKAGES[name]], check=True)
    return python


def version_of(python: Path, dist: str) -> str:
    out = subprocess.run(
        [str(python), "-c", f"import importlib.metadata as m; print(m.version('{dist}'))"],
        capture_output=True,
        text=True,
    )
    return out.stdout.strip() or "unknown"


def _file_name(target: str) -> str:
    """A target's name as a file name (specgate-file:PATH holds slashes)."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in target)


def start_target(name: str, upstream_port: int, tmp: Path) -> tuple[subprocess.Popen | None, int, str]:
    """(process or None for direct, port, version)."""
    if name == "direct":
        return None, upstream_port, "-"
    port = free_port()
    upstream = f"http://127.0.0.1:{upstream_port}"
    if name.startswith("specgate"):
        # Variants isolate a feature's cost: -noclassify (no rule needs the classifier), -nok (no per-request k
        # shaping: the pool runs the engine's own k), -bare (both off). -aiohttp / -httpx: everything on, the relay on
        # that library's client instead of the own one (bench/library_transports.py).
        # -cachemiss: everything on plus the response cache, every request a miss (a route that caches everything,
        # answers too big to keep): the cost of the key, the lookup and the attempt to keep it.
        # -redis: everything on, state in Redis (as replicas share it); -w2: two worker processes (`--workers 2`,
        # which needs Redis) on CPU 0 alone; -w2-2cpu: the two workers may use both CPUs (shared with the upstream
        # and the load generator: this machine has no third core to keep them apart).
        workers = 2 if "-w2" in name else 1
        redis_url = REDIS_URL if "-redis" in name or workers > 1 else None
        if redis_url is None and ("-redis" in name or workers > 1):
            raise RuntimeError("needs redis-server (apt-get install redis-server)")
        name_features = name.removesuffix("-2cpu").removesuffix("-w2").removesuffix("-redis")
        cache = name_features == "specgate-cachemiss"
        transport = name.removeprefix("specgate-") if name in ("specgate-aiohttp", "specgate-httpx") else None
        if name.startswith("specgate-file:"):
            # Another version of the own client (a path to an upstream_http.py): before/after in one run.
            transport = name.removeprefix("specgate-")
        classify = name_features in ("specgate", "specgate-nok") or transport is not None or cache
        shape_k = name_features in ("specgate", "specgate-noclassify") or transport is not None or cache
        routes: list[dict[str, Any]] = (
            [{"name": "code", "match": [{"classes": ["code"]}]}, {"name": "chat"}] if classify else [{"name": "chat"}]
        )
        if cache:
            routes = [{**r, "cache": "always"} for r in routes]
        config = tmp / f"{_file_name(name)}.yaml"
        config.write_text(
            json.dumps(
                {
                    "server": {"port": port, "max_concurrent_requests": 4096},
                    "pools": [
                        {
                            "name": "p",
                            "model": "m",
                            "endpoints": [upstream],
                            "speculation": {"method": "ngram", "max_k": 4, "per_request_k": shape_k},
                        }
                    ],
                    "routing": {"routes": routes, "default_route": "chat"},
                    "logging": {"level": "error"},
                    **({"cache": {"enabled": True, "max_entry_bytes": 1}} if cache else {}),
                    **({"state": {"redis_url": redis_url}} if redis_url else {}),
                }
            )
        )
        cmd = [sys.executable, "-m", "specgate", "serve", "--config", str(config), "--workers", str(workers)]
        if transport is not None:
            library = str(ROOT / "bench" / "library_transports.py")
            cmd = [sys.executable, library, "--transport", transport, "--config", str(config)]
        version = version_of(Path(sys.executable), "specgate")
    elif name == "litellm":
        python = venv_python("litellm")
        config = tmp / "litellm.yaml"
        config.write_text(
            json.dumps(
                {
                    "model_list": [
                        {
                            "model_name": "m",
                            "litellm_params": {"model": "openai/m", "api_base": f"{upstream}/v1", "api_key": "x"},
                        }
                    ],
                    "litellm_settings": {"telemetry": False},
                }
            )
        )
        cmd = [str(python.parent / "litellm"), "--config", str(config), "--port", str(port), "--num_workers", "1"]
        version = version_of(python, "litellm")
    elif name == "vllm-router":
        python = venv_python("vllm-router")
        cmd = [str(python.parent / "vllm-router"), "--worker-urls", upstream, "--port", str(port)]
        version = version_of(python, "vllm-router")
    else:
        raise ValueError(name)
    log = (tmp / f"{_file_name(name)}.log").open("w")
    # LiteLLM's proxy refuses to start without a master key; every target gets the same bearer key.
    env = {**os.environ, "LITELLM_MASTER_KEY": "sk-bench"}
    cpus = "0,1" if name.endswith("-2cpu") else "0"
    proc = subprocess.Popen([*pinned(cpus), *cmd], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=env)
    wait_port(port, proc)
    time.sleep(1.0)  # let it finish starting (health checks, workers)
    return proc, port, version


def _request(stream: bool) -> bytes:
    body = json.dumps({"model": "m", "prompt": "def add(a, b):", "max_tokens": 16, "stream": stream}).encode()
    return (
        b"POST /v1/completions HTTP/1.1\r\nhost: bench\r\ncontent-type: application/json\r\n"
        b"authorization: Bearer sk-bench\r\ncontent-length: %d\r\n\r\n" % len(body) + body
    )


async def _read_response(reader: asyncio.StreamReader, first: list[float]) -> tuple[bool, bool]:
    """(answered 200, connection reusable)"""
    head = await reader.readuntil(b"\r\n\r\n")
    first.append(time.monotonic())
    headers = head.lower()
    ok = head.startswith(b"HTTP/1.1 200")
    if b"transfer-encoding: chunked" in headers:
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            await reader.readexactly(size + 2)
            if size == 0:
                break
    else:
        length = int(headers.split(b"content-length:")[1].split(b"\r\n")[0])
        await reader.readexactly(length)
    return ok, b"connection: close" not in headers


async def _load(port: int, concurrency: int, seconds: float, stream: bool) -> dict[str, Any]:
    request = _request(stream)
    latencies: list[float] = []
    ttfb: list[float] = []
    errors = 0
    deadline = time.monotonic() + seconds

    async def client() -> None:
        nonlocal errors
        reader = writer = None
        while time.monotonic() < deadline:
            try:
                if writer is None:
                    reader, writer = await asyncio.open_connection("127.0.0.1", port)
                started = time.monotonic()
                writer.write(request)
                first: list[float] = []
                ok, keep = await _read_response(reader, first)
                if ok:
                    latencies.append(time.monotonic() - started)
                    ttfb.append(first[0] - started)
                else:
                    errors += 1
                if not keep:
                    writer.close()
                    reader = writer = None
            except (OSError, asyncio.IncompleteReadError, ValueError, IndexError):
                errors += 1
                if writer is not None:
                    writer.close()
                reader = writer = None
                await asyncio.sleep(0.01)
        if writer is not None:
            writer.close()

    await asyncio.gather(*(client() for _ in range(concurrency)))
    latencies.sort()
    ttfb.sort()

    def pct(xs: list[float], q: float) -> float | None:
        return round(1000 * xs[min(len(xs) - 1, int(q * len(xs)))], 3) if xs else None

    return {
        "requests": len(latencies),
        "errors": errors,
        "rps": round(len(latencies) / seconds, 1),
        "p50_ms": pct(latencies, 0.5),
        "p99_ms": pct(latencies, 0.99),
        "ttfb_p50_ms": pct(ttfb, 0.5),
    }


def measure(proc: subprocess.Popen | None, port: int, concurrency: int, seconds: float, stream: bool) -> dict:
    cpu0 = cpu_seconds(proc.pid) if proc else 0.0
    result = asyncio.run(_load(port, concurrency, seconds, stream))
    if proc is not None and result["requests"]:
        cpu_ms = 1000 * (cpu_seconds(proc.pid) - cpu0) / result["requests"]
        result["cpu_ms_per_req"] = round(cpu_ms, 4)
        result["rps_per_core"] = round(1000 / cpu_ms, 1) if cpu_ms > 0 else None
    return result


def start_profiler(proc: subprocess.Popen, out: Path) -> subprocess.Popen:
    """py-spy sampling the gateway for the whole of its runs (on the load generator's CPU), collapsed stacks out."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    out.parent.mkdir(parents=True, exist_ok=True)
    cmd = [spy, "record", "--pid", str(proc.pid), "--rate", "200", "--format", "raw", "--output", str(out)]
    return subprocess.Popen([*pinned("1"), *cmd], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


REDIS_URL: str | None = None


def start_redis() -> subprocess.Popen | None:
    """A redis-server for the targets that share state (on the load generator's CPU), if installed."""
    global REDIS_URL
    binary = shutil.which("redis-server")
    if binary is None:
        return None
    port = free_port()
    cmd = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    proc = subprocess.Popen([*pinned("1"), *cmd], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_port(port, proc)
    REDIS_URL = f"redis://127.0.0.1:{port}/0"
    return proc


def _start_upstream() -> tuple[int, subprocess.Popen[bytes]]:
    """The fake upstream on the load generator's CPU: (port, process)."""
    port = free_port()
    cmd = [*pinned("1"), sys.executable, "-m", "tests.fault_upstream", "--port", str(port)]
    return port, subprocess.Popen(cmd, cwd=ROOT)


def _report(gateways: str, seconds: float, repeats: int) -> dict[str, Any]:
    return {
        "machine": {"cpus": os.cpu_count(), "pinning": f"{gateways}; upstream and load generator on CPU 1"},
        "seconds": seconds,
        "repeats": repeats,
        "versions": {},
        "results": {},
    }


def run(
    targets: list[str], concurrencies: list[int], seconds: float, repeats: int, profile_dir: Path | None = None
) -> dict[str, Any]:
    redis = start_redis() if any("-redis" in t or "-w2" in t for t in targets) else None
    up_port, upstream = _start_upstream()
    report = _report("gateway on CPU 0", seconds, repeats)
    try:
        wait_port(up_port, upstream)
        with tempfile.TemporaryDirectory() as tmp:
            for name in targets:
                try:
                    proc, port, version = start_target(name, up_port, Path(tmp))
                except (RuntimeError, subprocess.CalledProcessError, OSError) as exc:
                    report["results"][name] = {"error": f"could not start: {exc}"}
                    print(f"[{name}] could not start: {exc}", file=sys.stderr)
                    continue
                report["versions"][name] = version
                rows: dict[str, Any] = {}
                spy = start_profiler(proc, profile_dir / f"{name}.txt") if profile_dir and proc else None
                try:
                    for kind in ("non-stream", "stream"):
                        for c in concurrencies:
                            runs = [measure(proc, port, c, seconds, kind == "stream") for _ in range(repeats)]
                            rows[f"{kind}/c{c}"] = _median(runs)
                            print(f"[{name}] {kind} c={c}: {rows[f'{kind}/c{c}']}", file=sys.stderr, flush=True)
                finally:
                    if spy is not None:
                        spy.send_signal(signal.SIGINT)  # py-spy writes its stacks on SIGINT
                        spy.wait(timeout=60)
                    if proc is not None:
                        proc.terminate()
                        proc.wait(timeout=30)
                report["results"][name] = rows
    finally:
        upstream.terminate()
        upstream.wait(timeout=30)
        if redis is not None:
            redis.terminate()
            redis.wait(timeout=30)
    _compare(report)
    return report


def run_interleaved(targets: list[str], concurrencies: list[int], seconds: float, repeats: int) -> dict[str, Any]:
    """All targets started at once (each idle while another is measured) and measured in turns at every cell,
    their order reversed every repeat, so that drift over the run (the machine is shared) falls on all alike. With
    two targets, each cell also reports the second's CPU per request over the first's, repeat by repeat."""
    up_port, upstream = _start_upstream()
    report = _report("gateways on CPU 0", seconds, repeats)
    report["interleaved"] = True
    report["results"] = {name: {} for name in targets}
    started: dict[str, tuple[subprocess.Popen[bytes] | None, int]] = {}
    try:
        wait_port(up_port, upstream)
        with tempfile.TemporaryDirectory() as tmp:
            for name in targets:
                proc, port, version = start_target(name, up_port, Path(tmp))
                started[name] = (proc, port)
                report["versions"][name] = version
            for kind in ("non-stream", "stream"):
                for c in concurrencies:
                    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in targets}
                    for rep in range(repeats):
                        for name in targets if rep % 2 == 0 else targets[::-1]:
                            proc, port = started[name]
                            runs[name].append(measure(proc, port, c, seconds, kind == "stream"))
                    cell = f"{kind}/c{c}"
                    for name in targets:
                        report["results"][name][cell] = _median(runs[name])
                    pairs = zip(runs[targets[0]], runs[targets[-1]], strict=True)
                    ratios = sorted(
                        b["cpu_ms_per_req"] / a["cpu_ms_per_req"]
                        for a, b in pairs
                        if a.get("cpu_ms_per_req") and b.get("cpu_ms_per_req")  # `direct` has no process to time
                    )
                    if len(targets) == 2 and ratios:
                        report.setdefault("cpu_ratio", {})[cell] = {
                            "median": round(statistics.median(ratios), 3),
                            "min": round(ratios[0], 3),
                            "max": round(ratios[-1], 3),
                        }
                    print(
                        f"{cell}: " + ", ".join(f"{n} {report['results'][n][cell]}" for n in targets), file=sys.stderr
                    )
    finally:
        for proc, _ in started.values():
            if proc is not None:
                proc.terminate()
                proc.wait(timeout=30)
        upstream.terminate()
        upstream.wait(timeout=30)
    _compare(report)
    return report


def _median(runs: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in runs[0]:
        values = [r[key] for r in runs if r.get(key) is not None]
        out[key] = round(statistics.median(values), 3) if values else None
    return out


def _compare(report: dict[str, Any]) -> None:
    direct = report["results"].get("direct", {})
    for name, rows in report["results"].items():
        if name == "direct" or "error" in rows:
            continue
        for key, row in rows.items():
            base = direct.get(key)
            if base and row.get("p50_ms") is not None and base.get("p50_ms") is not None:
                row["added_p50_ms"] = round(row["p50_ms"] - base["p50_ms"], 3)
                row["added_ttfb_p50_ms"] = round((row["ttfb_p50_ms"] or 0) - (base["ttfb_p50_ms"] or 0), 3)
                row["rps_vs_direct"] = round(row["rps"] / base["rps"], 3) if base["rps"] else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--targets", default="direct,specgate,litellm,vllm-router")
    parser.add_argument("--concurrency", default="1,32,128")
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--profile", type=Path, metavar="DIR", help="py-spy each gateway: stacks in DIR/<target>.txt")
    parser.add_argument(
        "--interleave",
        action="store_true",
        help="start every target at once and measure them in turns at each cell, order reversed every repeat",
    )
    args = parser.parse_args(argv)
    concurrencies = [int(c) for c in args.concurrency.split(",")]
    targets = args.targets.split(",")
    if args.interleave and (args.profile or any("-redis" in t or "-w2" in t for t in targets)):
        parser.error("--interleave takes neither --profile nor the Redis / two-worker targets")
    if args.interleave:
        report = run_interleaved(targets, concurrencies, args.seconds, args.repeats)
    else:
        report = run(targets, concurrencies, args.seconds, args.repeats, args.profile)
    text = json.dumps(report, indent=1)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
