"""Adapters to outside systems: engines (vLLM relay client, metrics, launcher, the scheduler plugin), Redis, webhooks.

Must not import `specgate.gateway` or `specgate.runtime`; `vllm_scheduler` and `spec_cap` import only vLLM and the
standard library (they run inside engine processes)."""
