"""Prefix-affinity picking through the dispatcher and the relay, in memory: a conversation's turns reach one engine
whichever gateway replica takes them, conversations spread, a hot prefix spills past the load bound, and load alone
places short prompts. The same on two real engines with their prefix caches: bench/prefix_affinity.py."""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

import orjson
from specgate.backends.pool import PoolSet
from specgate.backends.transport import MockAnswer, MockRequest, MockUpstream
from specgate.runtime.dispatch import Dispatcher
from specgate.runtime.metrics import GatewayMetrics
from specgate.runtime.relay import Relay, RelayResult
from specgate.runtime.requests import ParsedRequest, parse_body

from specgate.config import GatewayConfig

ENDPOINTS = [f"http://engine-{i}:8000" for i in range(4)]
SYSTEM = {"role": "system", "content": "You answer questions about the tax code precisely. " * 12}
OK_BODY = b'{"id":"x","choices":[{"message":{"content":"fine"}}]}'


class Replica:
    """One gateway replica's dispatcher, pools and relay over a shared in-memory upstream."""

    def __init__(self, upstream: MockUpstream, picking: dict[str, Any] | None = None) -> None:
        raw: dict[str, Any] = {"pools": [{"name": "p", "model": "m", "endpoints": ENDPOINTS}]}
        if picking is not None:
            raw["picking"] = picking
        config = GatewayConfig.model_validate(raw)
        self.pools = PoolSet(config)
        self.dispatcher = Dispatcher(config, self.pools)
        self.relay = Relay(config, GatewayMetrics(), upstream)

    async def send(self, messages: list[dict[str, str]]) -> str:
        req = self.request(messages)
        plan = self.dispatcher.plan(req, {})
        result = await self.relay.send(req, plan.pool, {})
        assert isinstance(result, RelayResult)
        return result.endpoint.url

    @staticmethod
    def request(messages: list[dict[str, str]]) -> ParsedRequest:
        return parse_body(orjson.dumps({"model": "m", "messages": messages}), "chat")


def _upstream() -> MockUpstream:
    async def handler(request: MockRequest) -> MockAnswer:
        return MockAnswer(200, [OK_BODY])

    return MockUpstream(handler)


def _turns(conversation: int, turns: int) -> list[list[dict[str, str]]]:
    messages = [SYSTEM]
    out = []
    for turn in range(turns):
        messages = [*messages, {"role": "user", "content": f"Conversation {conversation}, question {turn}?"}]
        out.append(messages)
        messages = [*messages, {"role": "assistant", "content": f"Answer {turn}."}]
    return out


async def test_a_conversation_stays_on_one_engine_across_replicas() -> None:
    upstream = _upstream()
    replicas = [Replica(upstream), Replica(upstream)]
    homes: Counter[str] = Counter()
    for conversation in range(40):
        # Turns alternate between two replicas that share nothing.
        seen = {await replicas[t % 2].send(m) for t, m in enumerate(_turns(conversation, 4))}
        assert len(seen) == 1
        homes.update(seen)
    # Conversations spread over all four engines.
    assert set(homes) == set(ENDPOINTS)


async def test_a_hot_prefix_spills_past_the_load_bound() -> None:
    upstream = _upstream()
    replica = Replica(upstream)
    pool = replica.pools.pools[0]
    request = Replica.request(_turns(0, 1)[0])
    home = replica.dispatcher.plan(request, {}).pool.pick(None, request.affinity)
    assert home is not None and request.affinity is not None
    # The home engine has 5 requests outstanding, the others none: mean 1.25, cap 1.2 * 1.25 + 1 = 2.5.
    home.outstanding = 5
    spill = pool.pick(None, request.affinity)
    assert spill is not None and spill is not home
    # The spill is the prefix's second choice on every replica, not the rotation's pick.
    other = Replica(upstream).pools.pools[0]
    other_home = next(ep for ep in other.endpoints if ep.url == home.url)
    other_home.outstanding = 5
    for _ in range(4):
        again = other.pick(None, request.affinity)
        assert again is not None and again.url == spill.url


async def test_short_prompts_are_placed_by_load() -> None:
    upstream = _upstream()
    replica = Replica(upstream)
    request = Replica.request([{"role": "user", "content": "hi"}])
    replica.dispatcher.plan(request, {})
    assert request.affinity is None
    picked = {replica.pools.pools[0].pick(None, None).url for _ in range(8)}  # type: ignore[union-attr]
    assert picked == set(ENDPOINTS)  # idle endpoints share light traffic round-robin


async def test_affinity_off_spreads_a_conversation() -> None:
    upstream = _upstream()
    replica = Replica(upstream, {"weights": {"prefix": 0}})
    seen = {await replica.send(m) for m in _turns(0, 8)}
    assert len(seen) > 1


async def test_a_spilled_conversation_stays_where_it_spilled() -> None:
    upstream = _upstream()
    for memory, stays in ((65_536, True), (0, False)):
        replica = Replica(upstream, {"placement_memory": memory})
        pool = replica.pools.pools[0]
        turns = _turns(0, 3)
        home_url = await replica.send(turns[0])
        home = next(ep for ep in pool.endpoints if ep.url == home_url)
        home.outstanding = 5  # over the bound: the second turn spills
        spill_url = await replica.send(turns[1])
        assert spill_url != home_url
        home.outstanding = 0  # the home is idle again
        third = await replica.send(turns[2])
        # With the memory the third turn goes where the second (the newest history) went; without, back home.
        assert (third == spill_url) is stays and (third == home_url) is not stays


async def test_a_config_reload_keeps_where_conversations_went() -> None:
    raw: dict[str, Any] = {"pools": [{"name": "p", "model": "m", "endpoints": ENDPOINTS}]}
    old = PoolSet(GatewayConfig.model_validate(raw))
    old.pools[0].placements.put(7, ENDPOINTS[2])
    same = PoolSet(GatewayConfig.model_validate(raw), carry=old)
    assert same.pools[0].placements.get(7) == ENDPOINTS[2]
    # A new capacity starts afresh rather than silently keeping the old bound.
    resized = PoolSet(GatewayConfig.model_validate({**raw, "picking": {"placement_memory": 8}}), carry=old)
    assert resized.pools[0].placements.get(7) is None and resized.pools[0].placements.capacity == 8


async def test_a_new_conversation_avoids_a_home_carrying_more_and_stays_where_it_started() -> None:
    upstream = _upstream()
    for memory, balanced in ((65_536, True), (0, False)):
        replica = Replica(upstream, {"placement_memory": memory, "new_prefix_bound": 1.0})
        pool = replica.pools.pools[0]
        turns = _turns(0, 3)
        probe = Replica.request(turns[0])
        replica.dispatcher.plan(probe, {})
        assert probe.affinity is not None
        home_url = Replica(upstream).pools.pools[0].pick(None, probe.affinity).url  # type: ignore[union-attr]
        # Other conversations placed a moment ago: two on the home, one on each other engine (mean 1.25).
        others = [home_url, home_url, *(url for url in ENDPOINTS if url != home_url)]
        for key, url in enumerate(others):
            pool.placements.put(key, url, time.time())
        first = await replica.send(turns[0])
        assert (first != home_url) is balanced
        # Later turns follow the first (where its history is), even though the home carries no more than the others.
        pool.placements.put(len(others), first, time.time())
        assert {await replica.send(m) for m in turns[1:]} == {first}
