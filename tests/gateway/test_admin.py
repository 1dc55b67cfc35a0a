"""Admin API on a live gateway process (no engine needed: the controller works from config)."""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx
import pytest
from specgate.gateway.cli import main

from tests.conftest import GatewayServer, free_port

ROUTING = {"routes": [{"name": "code", "k": {"min": 0, "max": 3}}, {"name": "chat", "k": {"pin": 1}}]}


def pools() -> list[dict]:
    return [
        {
            "name": "p",
            "model": "m",
            "endpoints": [f"http://127.0.0.1:{free_port()}"],
            "speculation": {"method": "ngram", "max_k": 4, "per_request_k": True},
        }
    ]


def test_routes_pin_unpin_pause_kill(start_gateway: Callable[..., GatewayServer]) -> None:
    gw = start_gateway(pools(), routing=ROUTING)
    url = f"{gw.url}/admin"
    routes = httpx.get(f"{url}/routes").json()["routes"]
    assert set(routes) == {"code", "chat", "default"}
    assert routes["chat"]["k"] == 1 and routes["chat"]["pinned_by"] == "config"
    assert routes["code"]["k"] == 0 and routes["code"]["acceptance"]["position_rates"] == [None] * 4
    assert httpx.get(f"{url}/routes/chat").json() == routes["chat"]  # the drift alert's generatorURL
    assert httpx.get(f"{url}/routes/nope").status_code == 404
    assert httpx.get(f"{url}/routes/check").json() == {"routes": {}, "advice": []}

    r = httpx.put(f"{url}/routes/code/k", json={"k": 3})
    assert r.status_code == 200 and r.json()["k"] == 3 and r.json()["pinned_by"] == "admin"
    assert gw.gateway.dispatcher.table.k_for("code") == 3
    assert httpx.put(f"{url}/routes/code/k", json={"k": 4}).status_code == 400  # outside bounds
    assert httpx.put(f"{url}/routes/code/k", json={"k": "2"}).json()["error"]["param"] == "k"
    assert httpx.put(f"{url}/routes/nope/k", json={"k": 1}).status_code == 404
    assert httpx.put(f"{url}/routes/code/k", content=b"{bad").status_code == 400

    assert httpx.post(f"{url}/controller/kill-switch").json()["kill_switch"] is True
    assert gw.gateway.dispatcher.table.k_for("code") == 0
    assert gw.gateway.dispatcher.table.k_for("chat") == 0
    assert httpx.post(f"{url}/controller/kill-switch", json={"enabled": False}).json()["kill_switch"] is False
    assert gw.gateway.dispatcher.table.k_for("code") == 3

    assert httpx.delete(f"{url}/routes/code/k").json()["pinned_by"] is None
    assert httpx.post(f"{url}/controller/pause").json()["paused"] is True
    assert httpx.post(f"{url}/controller/resume").json()["paused"] is False
    log = httpx.get(f"{url}/decisions").json()
    assert [(d["route"], d["new_k"]) for d in log][:2] == [("code", 3), ("code", 0)]
    status = httpx.get(f"{url}/controller").json()
    assert status["decision_table_version"] == gw.gateway.dispatcher.table.version > 1
    metrics = httpx.get(f"{gw.url}/metrics").text
    assert 'specgate_route_k{route="chat"} 1.0' in metrics
    assert "specgate_controller_ticks_total" in metrics


def test_admin_key_required_when_set(start_gateway: Callable[..., GatewayServer]) -> None:
    gw = start_gateway(pools(), routing=ROUTING, admin_key="s3cret-admin-key-0001")
    assert httpx.get(f"{gw.url}/admin/routes").status_code == 403
    assert httpx.get(f"{gw.url}/admin/routes", headers={"authorization": "Bearer nope"}).status_code == 403
    ok = httpx.get(f"{gw.url}/admin/routes", headers={"authorization": "Bearer s3cret-admin-key-0001"})
    assert ok.status_code == 200
    assert httpx.post(f"{gw.url}/admin/controller/kill-switch").status_code == 403
    assert gw.gateway.control.controller.kill_switch is False


def test_client_leaving_while_sending_its_body_is_not_a_server_error(
    start_gateway: Callable[..., GatewayServer],
) -> None:
    import socket
    import time

    gw = start_gateway(pools(), routing=ROUTING)
    host, port = gw.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port))) as s:
        s.sendall(
            b"POST /v1/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
            b'content-length: 1000\r\n\r\n{"model": "m", '
        )
        time.sleep(0.2)
    time.sleep(0.3)
    metrics = httpx.get(f"{gw.url}/metrics").text
    assert 'status="499"' in metrics
    assert 'status="500"' not in metrics


def test_schedules_per_pool(start_gateway: Callable[..., GatewayServer]) -> None:
    gw = start_gateway(pools(), routing=ROUTING)
    url = f"{gw.url}/admin/pools"
    body = httpx.get(f"{url}/p/schedules").json()
    assert body["pool"] == "p"
    assert body["routes"]["chat"] == "1:1"  # pinned in config: 1 at every batch size
    for route in ("code", "default"):
        points = [tuple(map(int, p.split(":"))) for p in body["routes"][route].split(",")]
        assert points[0][0] == 1 and all(0 <= k <= 4 for _, k in points)
    assert body["in_force"]["chat"] == "1:1" and body["in_force"]["code"] == "1:0"  # safe k until measured
    table = body["num_speculative_tokens_per_batch_size"]
    assert table[0][0] == 1 and all(0 <= k <= 4 for _, _, k in table)
    assert httpx.get(f"{url}/nope/schedules").status_code == 404
    httpx.post(f"{gw.url}/admin/controller/kill-switch", json={"enabled": True})
    off = httpx.get(f"{url}/p/schedules").json()
    assert set(off["routes"].values()) == {"1:0"} and off["num_speculative_tokens_per_batch_size"] == [[1, 256, 0]]


def test_schedules_cli_prints_a_speculative_config(
    start_gateway: Callable[..., GatewayServer], capsys: pytest.CaptureFixture[str]
) -> None:
    gw = start_gateway(pools(), routing=ROUTING)
    assert main(["schedules", "--gateway", gw.url, "--pool", "p"]) == 0
    out = capsys.readouterr().out
    config = json.loads(out.strip().splitlines()[-1])
    assert config["num_speculative_tokens_per_batch_size"][0][0] == 1
    assert "#   chat: 1:1" in out
    assert main(["schedules", "--gateway", gw.url, "--pool", "nope"]) == 2


def test_the_first_scrape_of_an_engine_lends_its_history_to_the_routes(
    start_gateway: Callable[..., GatewayServer],
) -> None:
    """A restarted gateway: the engine's counters since it started are the pool's acceptance, which the routes
    borrow from; later scrapes add only their increments."""
    from specgate.backends.vllm_metrics import EngineSnapshot

    gw = start_gateway(pools(), routing=ROUTING)
    ep = gw.gateway.pools.endpoints()[0]
    first = EngineSnapshot(drafts=500.0, draft_tokens=2000.0, accepted_tokens=900.0, accepted_per_pos={0: 400.0})
    gw.gateway._on_snapshot(ep, None, first)
    later = EngineSnapshot(drafts=600.0, draft_tokens=2400.0, accepted_tokens=1000.0, accepted_per_pos={0: 480.0})
    gw.gateway._on_snapshot(ep, first, later)
    gw.gateway.control.tick([])
    status = httpx.get(f"{gw.url}/admin/routes").json()["routes"]["code"]
    assert status["acceptance"]["pool_evidence_steps"] == pytest.approx(600.0, rel=0.01)
