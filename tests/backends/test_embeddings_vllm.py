"""The semantic cache's embeddings endpoint (backends/embeddings.py) against a real vLLM embeddings server (the tiny
model as a pooling model): unit vectors, the same text the same vector, and a near-duplicate answered from the
cache through a gateway that embeds with it. The tiny model's embeddings are poor at meaning (docs/cache.md has
its precision on the labelled set); here only the mechanism is checked, with pairs it separates."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import httpx
import numpy as np
import pytest
from specgate.backends.embeddings import EndpointEmbedder
from specgate.backends.launcher import EngineSpec

from tests.conftest import MODEL, GatewayServer
from tests.fault_upstream import FaultUpstream

pytestmark = pytest.mark.slow

QUESTION = "How do I reverse a list in Python?"
NEAR = "How can I reverse a list in Python?"
FAR = "What is the capital of France?"


def test_vectors_come_back_unit_length_and_stable(embeddings_engine: EngineSpec) -> None:
    async def embed_all() -> list[np.ndarray]:
        embedder = EndpointEmbedder(embeddings_engine.url, MODEL, None, 30.0)
        try:
            return [v for t in (QUESTION, QUESTION, NEAR, FAR) if (v := await embedder.embed(t)) is not None]
        finally:
            await embedder.aclose()

    q, again, near, far = asyncio.run(embed_all())
    assert abs(float(np.linalg.norm(q)) - 1.0) < 1e-5
    assert float(q @ again) > 0.9999
    assert float(q @ near) > float(q @ far)


def test_a_gateway_finds_a_near_duplicate_with_the_engines_embeddings(
    embeddings_engine: EngineSpec, start_gateway: Callable[..., GatewayServer]
) -> None:
    upstream = FaultUpstream("ok")
    try:
        # Measured with this model: QUESTION / NEAR 0.991, QUESTION / FAR 0.910.
        gw = start_gateway(
            [{"name": "p", "model": "m", "endpoints": [upstream.url]}],
            cache={
                "enabled": True,
                "semantic": {
                    "enabled": True,
                    "threshold": 0.98,
                    "embedding_url": embeddings_engine.url,
                    "embedding_model": MODEL,
                },
            },
            routing={"routes": [{"name": "faq", "semantic_cache": True}], "default_route": "faq"},
        )

        def ask(text: str) -> str:
            body = {"model": "m", "messages": [{"role": "user", "content": text}], "temperature": 0}
            r = httpx.post(f"{gw.url}/v1/chat/completions", json=body, timeout=30)
            assert r.status_code == 200
            return r.headers["x-specgate-cache"]

        assert [ask(QUESTION), ask(NEAR), ask(FAR)] == ["miss", "hit", "miss"]
        assert upstream.hits == 2
    finally:
        upstream.close()
