"""specgate's vLLM scheduler plugin: per-request, per-step limits on draft tokens.

Load it with `--scheduler-cls specgate.backends.vllm_scheduler.SpecCapScheduler` (synchronous scheduling: n-gram
pools, or `--no-async-scheduling`) or `...SpecCapAsyncScheduler` (async scheduling, which vLLM 0.32 turns on by
default for draft-model / EAGLE / MTP / DFlash pools). Each refuses to start under the other mode, naming the one
to use.

A request may carry in `vllm_xargs`:
- `num_speculative_tokens: k`: a fixed cap (k = 0: no speculation for this request alone);
- `specgate_k_schedule: "1:4,9:2,33:0"`: its route's k by the engine's batch size (here k=4 up to 8 running
  requests, 2 up to 32, 0 from 33), looked up at every step from the live batch.
The request's k at a step is the smaller of the two. Requests without either keep the engine's k.

What a limit saves, at each step:
- Verification: the request's drafts are cut to its k before they are scheduled (sync: when drafts arrive in
  `update_draft_token_ids`; async: the draft placeholders set at schedule time, which bound the real drafts).
- Drafting: the step's `num_spec_tokens_to_schedule` (vLLM's own dynamic-k path, which the drafters honour) is
  lowered to the largest k any scheduled request may use, so when every request wants at most k, the drafter
  drafts at most k.
A malformed limit is ignored (the engine's k applies) and counted; it never fails a request or the engine.
"""

from __future__ import annotations

import inspect
import logging
import os
from typing import Any

import vllm
from specgate.backends.spec_cap import ALLOW_UNTESTED_ENV, SCHEDULE_KEY, TESTED_VLLM, read_limit, untested_vllm
from vllm.v1.core.sched.async_scheduler import AsyncScheduler
from vllm.v1.core.sched.scheduler import Scheduler

__all__ = ["SchedulerAPIChanged", "SpecCapAsyncScheduler", "SpecCapScheduler"]

log = logging.getLogger("specgate.scheduler")


class SchedulerAPIChanged(RuntimeError):
    """vLLM's Scheduler no longer has the shape this plugin overrides, or the plugin class does not fit the mode."""


_HOOKS = {
    "update_draft_token_ids": ["self", "draft_token_ids"],
    "_update_after_schedule": ["self", "scheduler_output"],
}


def _check_version(version: str, allow: bool) -> None:
    """Refuse a vLLM release the plugin was not run against: it reaches into the scheduler's internals, whose
    meaning can change without a signature changing. `SPECGATE_ALLOW_UNTESTED_VLLM=1` starts anyway, warned."""
    if not untested_vllm(version):
        return
    message = (
        f"specgate's scheduler plugin was tested with vLLM {', '.join(TESTED_VLLM)}, not {version} "
        "(docs/engines.md lists the tested versions)"
    )
    if not allow:
        raise SchedulerAPIChanged(f"{message}; set {ALLOW_UNTESTED_ENV}=1 to start anyway")
    log.warning("%s; starting anyway (%s=1)", message, ALLOW_UNTESTED_ENV)


def _check_api() -> None:
    for name, expected in _HOOKS.items():
        method = getattr(Scheduler, name, None)
        if method is None:
            raise SchedulerAPIChanged(f"vllm Scheduler.{name} is gone; specgate's plugin needs updating")
        params = list(inspect.signature(method).parameters)
        if params != expected:
            raise SchedulerAPIChanged(
                f"vllm Scheduler.{name}{tuple(params)} changed signature; "
                f"specgate's plugin was written for {tuple(expected)}"
            )


_check_version(vllm.__version__, os.environ.get(ALLOW_UNTESTED_ENV) == "1")
_check_api()


class _SpecLimits:
    """The per-request, per-step limit logic shared by both scheduler classes (a mixin over vLLM's Scheduler)."""

    # Set by vLLM's Scheduler.__init__.
    requests: dict[str, Any]
    running: list[Any]
    vllm_config: Any
    _async_mode: bool = False

    def _init_limits(self) -> None:
        async_on = bool(getattr(self.vllm_config.scheduler_config, "async_scheduling", False))
        if async_on != self._async_mode:
            use = "SpecCapAsyncScheduler" if async_on else "SpecCapScheduler"
            mode = "on" if async_on else "off"
            raise SchedulerAPIChanged(
                f"async scheduling is {mode} in this engine: start it with "
                f"--scheduler-cls specgate.backends.vllm_scheduler.{use}"
            )
        spec = self.vllm_config.speculative_config
        # The drafter's k; requests may ask for less, never more.
        self.max_k: int = int(spec.num_speculative_tokens) if spec is not None else 0
        self.malformed_caps = 0
        self.capped_steps = 0
        # Steps in which the drafter was told to draft fewer than the engine's k.
        self.narrowed_steps = 0
        # Steps in which a scheduled request could draft but its drafter proposed nothing, recorded as verify steps
        # with 0 drafts in the request's per-step metrics (see `_record_empty_proposal`).
        self.empty_proposals = 0
        # The drafter's k in the step that ran last (after narrowing).
        self.drafting_k = self.max_k
        self._detailed = getattr(self, "spec_decode_metrics_level", None) == "detailed"
        log.info(
            "specgate %s active (max k %d)", "SpecCapAsyncScheduler" if async_on else "SpecCapScheduler", self.max_k
        )

    def _limit(self, request: Any, batch: int) -> int | None:
        params = request.sampling_params
        k, malformed = read_limit(getattr(params, "extra_args", None) if params else None, self.max_k, batch)
        if malformed:
            self.malformed_caps += 1
            if self.malformed_caps in (1, 10, 100) or self.malformed_caps % 1000 == 0:
                log.warning("specgate: ignored a malformed speculation limit (%d so far)", self.malformed_caps)
        return k

    def _narrow_drafting(self, scheduler_output: Any) -> dict[str, int]:
        """Limits of this step's requests at this step's batch size; lowers the step's drafting k to their max."""
        scheduled = scheduler_output.num_scheduled_tokens
        batch = len(scheduled)
        limits: dict[str, int] = {}
        widest = 0
        for req_id in scheduled:
            request = self.requests.get(req_id)
            k = self._limit(request, batch) if request is not None else None
            if k is None:
                widest = self.max_k
            else:
                limits[req_id] = k
                widest = max(widest, k)
        current = scheduler_output.num_spec_tokens_to_schedule
        if batch and widest < current:
            scheduler_output.num_spec_tokens_to_schedule = widest
            self.narrowed_steps += 1
        self.drafting_k = min(widest, current) if batch else current
        return limits

    def _record_empty_proposal(self, request: Any, batch: int) -> None:
        """A request on a k schedule that may draft now, whose drafter (n-gram, suffix) proposed nothing: record a
        verify step with 0 drafts and 0 accepted in its per-request metrics (`detailed`: a 0 in `per_step_drafted`).

        Without it the gateway cannot tell a step capped to k = 0 by the schedule from one where nothing was
        proposed (vLLM records only steps with drafts), and "nothing proposed" is what unpredictable text gives
        an n-gram drafter: a collapse of acceptance that would otherwise go unseen. Only requests carrying a
        schedule, only at the `detailed` level, only when the drafter ran in the last step: everything else keeps
        vLLM's own accounting."""
        metrics = getattr(request, "spec_decode_metrics", None)
        params = request.sampling_params
        extra = getattr(params, "extra_args", None) if params else None
        if not self._detailed or metrics is None or not extra or SCHEDULE_KEY not in extra:
            return
        if self.drafting_k <= 0 or request.is_finished() or getattr(request, "is_prefill_chunk", False):
            return
        if request.num_output_tokens < 1:
            return
        k = self._limit(request, batch)
        if k is not None and k > 0:
            metrics.observe(num_draft_tokens=0, num_accepted=0, detailed=True)
            self.empty_proposals += 1


class SpecCapScheduler(_SpecLimits, Scheduler):
    """Synchronous scheduling: drafts exist when `update_draft_token_ids` runs, and are cut there."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._init_limits()

    def _update_after_schedule(self, scheduler_output: Any) -> None:
        self._narrow_drafting(scheduler_output)
        super()._update_after_schedule(scheduler_output)

    def update_draft_token_ids(self, draft_token_ids: Any) -> None:
        super().update_draft_token_ids(draft_token_ids)
        # The drafts are for the next step; the batch it will run is the one running now.
        batch = len(self.running)
        for req_id in draft_token_ids.req_ids:
            request = self.requests.get(req_id)
            if request is None:
                continue
            if not request.spec_token_ids:
                self._record_empty_proposal(request, batch)
                continue
            k = self._limit(request, batch)
            if k is not None and len(request.spec_token_ids) > k:
                request.spec_token_ids = request.spec_token_ids[:k]
                self.capped_steps += 1


class SpecCapAsyncScheduler(_SpecLimits, AsyncScheduler):
    """Async scheduling: the next step's draft slots are placeholders set at schedule time; each request gets
    only as many as its limit, and vLLM trims the real drafts to them (`update_draft_token_ids_in_output`)."""

    _async_mode = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._init_limits()

    def _update_after_schedule(self, scheduler_output: Any) -> None:
        limits = self._narrow_drafting(scheduler_output)
        super()._update_after_schedule(scheduler_output)
        for req_id, k in limits.items():
            request = self.requests.get(req_id)
            if request is not None and len(request.spec_token_ids) > k:
                # A new list: vLLM shares one placeholder list between requests.
                request.spec_token_ids = request.spec_token_ids[:k]
                self.capped_steps += 1
