"""Drift alerts on the real engine: false alarms with nothing drifting, then the delay to detect real drift and to
resolve it once undone. The gateway runs with its default `alerts.drift` settings and an adaptive controller.

    python bench/drift_real.py --minutes 20 --out bench/results/drift-real.json

No drift (the first `--minutes`): a route mixing copy-heavy code with prose (the n-gram drafter proposes often for
one, rarely for the other), load stepping through 1, 4, 8 and 2 clients every 90 s, k moved by the controller (and
its exploration) and by admin pins every 4 minutes, and the engine restarted once halfway (vLLM killed and started
again: the gateway sees it down, then back with its counters reset). Then drift: the target's sampling made hotter
(temperature 1.0 on the copy-heavy prompts: the target accepts ~15% of first drafts against ~60% greedy; k pinned
at 4; 0.3 before the CPU sampling fix, docs/testbeds.md)
until the alert fires; then undone until it resolves. Alerts are counted at a real webhook receiver (tests/receiver.py).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import uvicorn

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from specgate.backends.launcher import EngineProcess, EngineSpec  # noqa: E402
from specgate.gateway.app import create_app  # noqa: E402

from specgate.config import validate_config  # noqa: E402
from tests.receiver import WebhookReceiver  # noqa: E402

COPY = "import os\nimport sys\nimport os\nimport sys\nimport os\nimport sys\nimport os\nimport"
PROSE = "Write two sentences about the weather in spring, then say why you like it."
LOAD_STEPS = (1, 4, 8, 2)
STEP_S = 90.0
PIN_EVERY_S = 240.0


def _body(kind: str, rng: random.Random, model: str) -> dict[str, Any]:
    prose = kind == "mixed" and rng.random() < 0.5
    return {
        "model": model,
        "prompt": PROSE if prose else COPY,
        "max_tokens": 48,
        "temperature": 1.0 if kind == "hot" else 0.0,
        "seed": rng.randint(0, 10**6),
        "stream": True,
    }


class Load:
    """Closed-loop clients in a background thread; `clients` and `kind` change while it runs."""

    def __init__(self, url: str, model: str) -> None:
        self.url, self.model = url, model
        self.clients, self.kind = 1, "mixed"
        self.ok = self.failed = 0
        # (monotonic time, HTTP status or exception name) of each failure: when and why, against the restart.
        self.failures: list[tuple[float, str]] = []
        self._stop = False
        self.thread = threading.Thread(target=lambda: asyncio.run(self._run()), daemon=True)

    async def _run(self) -> None:
        rng = random.Random(3)
        async with httpx.AsyncClient(timeout=120) as http:

            async def client(i: int) -> None:
                while not self._stop:
                    if i >= self.clients:
                        await asyncio.sleep(0.2)
                        continue
                    body = _body(self.kind, rng, self.model)
                    try:
                        async with http.stream("POST", f"{self.url}/v1/completions", json=body) as r:
                            await r.aread()
                            status: int | str = r.status_code
                    except httpx.HTTPError as exc:
                        status = type(exc).__name__
                    if status == 200:
                        self.ok += 1
                        continue
                    self.failed += 1
                    self.failures.append((time.monotonic(), str(status)))
                    await asyncio.sleep(0.5)  # a client backs off, as one should on a 503 (run 1 did not: 17k retries)

            await asyncio.gather(*(client(i) for i in range(max(LOAD_STEPS))))

    def stop(self) -> None:
        self._stop = True
        self.thread.join(timeout=180)


def _firing(receiver: WebhookReceiver) -> list[dict[str, Any]]:
    return [a for m in receiver.received for a in m.json()["alerts"] if a["status"] == "firing"]


def _resolved(receiver: WebhookReceiver) -> list[dict[str, Any]]:
    return [a for m in receiver.received for a in m.json()["alerts"] if a["status"] == "resolved"]


def run(args: argparse.Namespace) -> dict[str, Any]:
    logs = Path(tempfile.mkdtemp(prefix="specgate-drift-real-"))
    spec = EngineSpec(port=args.engine_port)
    engine = EngineProcess(spec, logs / "engine.log")
    engine.start()
    engine.wait_healthy()
    receiver = WebhookReceiver()
    port = args.port
    config = validate_config(
        {
            "server": {"port": port},
            "pools": [
                {
                    "name": "cpu",
                    "model": spec.served_name,
                    "endpoints": [spec.url],
                    "speculation": {"method": "ngram", "max_k": spec.max_k, "per_request_k": True},
                }
            ],
            "routing": {"routes": [{"name": "code"}], "default_route": "code"},
            "controller": {"cost_prior": "cpu"},
            "alerts": {"receivers": [{"name": "ops", "url": receiver.url + "/alerts"}]},
            "discovery": {"probe": False},
        }
    )
    server = uvicorn.Server(uvicorn.Config(create_app(config), port=port, log_config=None, access_log=False))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    url = f"http://127.0.0.1:{port}"
    load = Load(url, spec.served_name)
    load.thread.start()
    report: dict[str, Any] = {"minutes_without_drift": args.minutes, "settings": config.alerts.drift.model_dump()}
    try:
        started = time.monotonic()
        end = started + 60 * args.minutes
        restarted = False
        outage: tuple[float, float] | None = None
        pins = [1, None, 4, None, 2, None]
        next_pin, pin_i = started + PIN_EVERY_S, 0
        states: list[str] = []
        while time.monotonic() < end:
            elapsed = time.monotonic() - started
            load.clients = LOAD_STEPS[int(elapsed // STEP_S) % len(LOAD_STEPS)]
            if time.monotonic() >= next_pin:
                k = pins[pin_i % len(pins)]
                pin_i += 1
                next_pin += PIN_EVERY_S
                if k is None:
                    httpx.delete(f"{url}/admin/routes/code/k", timeout=10)
                else:
                    httpx.put(f"{url}/admin/routes/code/k", json={"k": k}, timeout=10)
            if not restarted and elapsed > 30 * args.minutes:
                down_at = time.monotonic()
                engine.stop()
                time.sleep(5)
                engine.start()
                engine.wait_healthy()
                # The gateway finds the engine healthy at its next probe, a few seconds later.
                outage = (down_at, time.monotonic() + 15.0)
                restarted = True
                report["engine_restarted_at_min"] = round(elapsed / 60, 1)
                report["engine_down_s"] = round(outage[1] - outage[0], 1)
            states.append(_state(url))
            time.sleep(5)
        report["baseline_learned"] = "ok" in states or "firing" in states
        report["false_alarms"] = len(_firing(receiver))
        report["false_alarm_summaries"] = [a["annotations"]["summary"] for a in _firing(receiver)]
        report["false_alarms_per_hour"] = round(report["false_alarms"] / (args.minutes / 60), 2)
        report["decision_changes"] = _decision_changes(url)
        report["requests_ok_failed"] = [load.ok, load.failed]
        report["failures"] = _failures(load.failures, outage)
        # Drift: hotter sampling at a steady two clients, until the alert fires. k pinned at 4 so that evidence comes
        # at a steady rate (left free, the controller lowers k as acceptance falls, and the evidence then comes from
        # its exploration alone: slower).
        httpx.put(f"{url}/admin/routes/code/k", json={"k": 4}, timeout=10)
        load.clients, load.kind = 2, "hot"
        report["detect_s"] = _wait(lambda: len(_firing(receiver)) > report["false_alarms"], args.budget_s)
        load.kind = "copy"
        report["resolve_s"] = _wait(lambda: len(_resolved(receiver)) >= len(_firing(receiver)) > 0, args.budget_s)
        report["alerts"] = [
            {k: a[k] for k in ("status", "labels", "annotations", "startsAt", "endsAt")} for a in _firing(receiver)
        ]
    finally:
        load.stop()
        server.should_exit = True
        engine.stop()
        receiver.close()
    return report


def _failures(failures: list[tuple[float, str]], outage: tuple[float, float] | None) -> dict[str, dict[str, int]]:
    """Failures counted by cause, during the engine's restart (stop to healthy, plus the gateway's probe) and
    outside it: outside, there should be none."""
    out: dict[str, dict[str, int]] = {"during_restart": {}, "outside_restart": {}}
    for at, why in failures:
        during = outage is not None and outage[0] <= at <= outage[1]
        bucket = out["during_restart" if during else "outside_restart"]
        bucket[why] = bucket.get(why, 0) + 1
    return out


def _state(url: str) -> str:
    text = httpx.get(f"{url}/metrics", timeout=10).text
    line = next((x for x in text.splitlines() if x.startswith('specgate_drift_state{route="code"}')), None)
    return "none" if line is None else {0: "learning", 1: "ok", 2: "firing"}[int(float(line.split()[-1]))]


def _decision_changes(url: str) -> int:
    text = httpx.get(f"{url}/metrics", timeout=10).text
    return int(sum(float(x.split()[-1]) for x in text.splitlines() if x.startswith("specgate_decision_changes_total")))


def _wait(done: Any, budget_s: float) -> float | None:
    started = time.monotonic()
    while time.monotonic() - started < budget_s:
        if done():
            return round(time.monotonic() - started, 1)
        time.sleep(1.0)
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=30.0, help="minutes without drift")
    ap.add_argument("--budget-s", type=float, default=900.0, help="longest wait to detect, then to resolve")
    ap.add_argument("--engine-port", type=int, default=18700)
    ap.add_argument("--port", type=int, default=18701)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    report = run(args)
    text = json.dumps(report, indent=1)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
