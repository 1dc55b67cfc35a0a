"""A FAKE SGLang server for tests: no SGLang can run here (its CPU build needs kernels compiled from source;
docs/engines.md). It answers with the shapes SGLang 0.5.5's source produces (srt/entrypoints/http_server.py,
srt/entrypoints/openai/serving_completions.py, srt/metrics/collector.py; the /metrics text below was rendered by
that collector), fixed texts, and counts requests. Not an engine: nothing is generated."""

from __future__ import annotations

import threading
import time
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

LABELS = 'engine_type="unified",model_name="{model}",pp_rank="0",tp_rank="{rank}"'
METRICS = """\
# HELP sglang:num_running_reqs The number of running requests.
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{{{l0}}} {running}
sglang:num_running_reqs{{{l1}}} {running}
# HELP sglang:num_queue_reqs The number of requests in the waiting queue.
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs{{{l0}}} {queued}
sglang:num_queue_reqs{{{l1}}} {queued}
# HELP sglang:token_usage The token usage.
# TYPE sglang:token_usage gauge
sglang:token_usage{{{l0}}} {usage}
sglang:token_usage{{{l1}}} {usage}
# HELP sglang:gen_throughput The generation throughput (token/s).
# TYPE sglang:gen_throughput gauge
sglang:gen_throughput{{{l0}}} 87.5
# HELP sglang:spec_accept_length The average acceptance length of speculative decoding.
# TYPE sglang:spec_accept_length gauge
sglang:spec_accept_length{{{l0}}} {accept_length}
sglang:spec_accept_length{{{l1}}} {accept_length}
# HELP sglang:spec_accept_rate {rate_help}
# TYPE sglang:spec_accept_rate gauge
sglang:spec_accept_rate{{{l0}}} 0.57
# HELP sglang:generation_tokens_total Number of generation tokens processed.
# TYPE sglang:generation_tokens_total counter
sglang:generation_tokens_total{{model_name="{model}"}} 20.0
"""


RATE_HELP = "The average acceptance rate of speculative decoding (`accepted tokens / total draft tokens` in batch)."


class FakeSGLang:
    """Served on a thread; `running`, `queued`, `usage`, `accept_length` and `server_info` may be changed live."""

    def __init__(self, port: int, model: str = "m", steps: int = 3, new_info_path: bool = False) -> None:
        self.model = model
        self.running, self.queued, self.usage, self.accept_length = 3.0, 2.0, 0.12, 2.71
        self.hits = 0
        self.server_info: dict[str, Any] = {
            # A few of `asdict(server_args)`'s keys, then scheduler info and the version, as 0.5.5 returns them.
            "model_path": "/models/m",
            "served_model_name": model,
            "speculative_algorithm": "EAGLE3",
            "speculative_num_steps": steps,
            "speculative_eagle_topk": 1,
            "speculative_num_draft_tokens": steps + 1,
            "max_total_num_tokens": 65536,
            "internal_states": [{"avg_spec_accept_length": 2.71, "last_gen_throughput": 87.5}],
            "version": "0.5.5",
        }
        # /server_info is the 2026 name; 0.5.5 has only /get_server_info.
        info_path = "/server_info" if new_info_path else "/get_server_info"
        app = Starlette(
            routes=[
                Route("/health", self._health),
                Route(info_path, self._info),
                Route("/v1/models", self._models),
                Route("/metrics", self._metrics),
                Route("/v1/completions", self._completion, methods=["POST"]),
            ]
        )
        self.url = f"http://127.0.0.1:{port}"
        self._server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None))
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("the fake SGLang server did not start")
            time.sleep(0.01)

    def close(self) -> None:
        self._server.should_exit = True
        self._thread.join(10)

    async def _health(self, request: Request) -> Response:
        return Response(status_code=200)

    async def _info(self, request: Request) -> Response:
        return JSONResponse(self.server_info)

    async def _models(self, request: Request) -> Response:
        card = {"id": self.model, "object": "model", "created": 1764800000, "owned_by": "sglang", "root": self.model}
        return JSONResponse({"object": "list", "data": [{**card, "parent": None, "max_model_len": 4096}]})

    async def _metrics(self, request: Request) -> Response:
        labels = [LABELS.format(model=self.model, rank=r) for r in (0, 1)]
        text = METRICS.format(
            l0=labels[0],
            l1=labels[1],
            model=self.model,
            running=self.running,
            queued=self.queued,
            usage=self.usage,
            accept_length=self.accept_length,
            rate_help=RATE_HELP,
        )
        return Response(text, media_type="text/plain; version=0.0.4")

    async def _completion(self, request: Request) -> Response:
        self.hits += 1
        body = await request.json()
        return JSONResponse(
            {
                "id": "3f1c2b",
                "object": "text_completion",
                "created": int(time.time()),
                "model": body.get("model", self.model),
                "choices": [{"index": 0, "text": " fake", "logprobs": None, "finish_reason": "length"}],
                "usage": {"prompt_tokens": 5, "total_tokens": 6, "completion_tokens": 1},
                "metadata": {"weight_version": "default"},
            }
        )
