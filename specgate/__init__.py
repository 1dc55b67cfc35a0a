"""specgate: an OpenAI-compatible inference gateway with adaptive speculative-decoding control.

The package is split into rooms (docs/architecture.md), each a subpackage; imports run one way:
`gateway` (HTTP surface) -> `runtime` (request pipeline, background services) -> `backends` (engines, Redis,
webhooks, the vLLM plugin) -> `controllers` (pure decision logic). `config`, `errors` and `sse` are leaves that
import nothing else of specgate. `offline` holds tools the server never runs (simulator, load generator, plots).

This module stays empty of imports: vLLM imports `specgate.backends.vllm_scheduler` inside engine processes,
which may have none of the gateway's dependencies installed.
"""

__all__ = ["__version__"]

__version__ = "0.1.0"
