"""Adapters to outside systems: engines (vLLM relay client, metrics, launcher, the scheduler plugin), Redis, webhooks.

Must not import `specgate.gateway` or `specgate.runtime`; `vllm_scheduler` and `spec_cap` import only vLLM, the
standard library and `specgate.controllers.k_schedule` (they run inside engine processes)."""
