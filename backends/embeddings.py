"""Embeddings from an OpenAI-compatible server (`POST /v1/embeddings`; vLLM serves them with a pooling model), for
the semantic cache (runtime/semantic_cache.py). Any failure is `EmbeddingUnavailable`: the lookup is a miss."""

from __future__ import annotations

import httpx
import numpy as np

__all__ = ["EmbeddingUnavailable", "EndpointEmbedder"]


class EmbeddingUnavailable(Exception):
    pass


class EndpointEmbedder:
    def __init__(self, url: str, model: str, api_key: str | None, timeout_s: float) -> None:
        headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        # No proxies from the environment: the same rule as the engines' clients (backends/monitor.py).
        self._client = httpx.AsyncClient(base_url=url, headers=headers, timeout=timeout_s, trust_env=False)
        self._model = model

    async def embed(self, text: str) -> np.ndarray | None:
        try:
            r = await self._client.post("/v1/embeddings", json={"model": self._model, "input": text})
            r.raise_for_status()
            values = r.json()["data"][0]["embedding"]
            vec = np.asarray(values, dtype=np.float32)
        except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError) as exc:
            raise EmbeddingUnavailable(f"{type(exc).__name__}: {exc}"[:200]) from exc
        if vec.ndim != 1 or vec.size == 0 or not np.all(np.isfinite(vec)):
            raise EmbeddingUnavailable("the embedding is not a finite vector")
        norm = float(np.linalg.norm(vec))
        if norm == 0.0:
            raise EmbeddingUnavailable("the embedding is all zeros")
        return vec / norm

    async def aclose(self) -> None:
        await self._client.aclose()
