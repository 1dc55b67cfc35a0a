"""The scheduler plugin's own logic, with vLLM's Scheduler base stubbed out where it would need a whole engine:
the API guard, the refusal under async scheduling, and the per-request cap on drafts. The plugin on a real engine:
tests/backends/test_speculation_vllm.py."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from specgate.backends import vllm_scheduler
from specgate.backends.vllm_scheduler import SchedulerAPIChanged, SpecCapAsyncScheduler, SpecCapScheduler


def test_api_guard_accepts_the_tested_vllm() -> None:
    vllm_scheduler._check_api()


def test_version_guard_refuses_an_untested_vllm_unless_allowed(caplog: pytest.LogCaptureFixture) -> None:
    import vllm

    vllm_scheduler._check_version(vllm.__version__, allow=False)  # the installed one is the tested one
    vllm_scheduler._check_version("0.32.0+cpu", allow=False)  # a build suffix is not another release
    with pytest.raises(SchedulerAPIChanged, match=r"not 0\.33\.0.*SPECGATE_ALLOW_UNTESTED_VLLM=1"):
        vllm_scheduler._check_version("0.33.0", allow=False)
    with caplog.at_level("WARNING", logger="specgate.scheduler"):
        vllm_scheduler._check_version("0.33.0", allow=True)
    assert "starting anyway" in caplog.text


def test_api_guard_refuses_a_scheduler_without_the_hook(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vllm_scheduler, "Scheduler", type("Scheduler", (), {}))
    with pytest.raises(SchedulerAPIChanged, match="is gone"):
        vllm_scheduler._check_api()


def test_api_guard_refuses_a_changed_signature(monkeypatch: pytest.MonkeyPatch) -> None:
    def update_draft_token_ids(self: object, draft_token_ids: object, extra: object) -> None: ...

    monkeypatch.setattr(
        vllm_scheduler, "Scheduler", type("Scheduler", (), {"update_draft_token_ids": update_draft_token_ids})
    )
    with pytest.raises(SchedulerAPIChanged, match="changed signature"):
        vllm_scheduler._check_api()


def _stub_base(monkeypatch: pytest.MonkeyPatch, *, async_scheduling: bool, max_k: int | None) -> None:
    def base_init(self: Any, *args: Any, **kwargs: Any) -> None:
        self.vllm_config = SimpleNamespace(
            scheduler_config=SimpleNamespace(async_scheduling=async_scheduling),
            speculative_config=None if max_k is None else SimpleNamespace(num_speculative_tokens=max_k),
        )
        self.requests = {}
        self.running = []
        # What AsyncScheduler's own code reads.
        self.num_spec_tokens = max_k or 0
        self.num_sampled_tokens_per_step = 1
        self.use_v2_model_runner = False
        self._spec_token_placeholders = [-1] * (max_k or 0)

    monkeypatch.setattr(vllm_scheduler.Scheduler, "__init__", base_init)
    monkeypatch.setattr(vllm_scheduler.AsyncScheduler, "__init__", base_init)
    monkeypatch.setattr(vllm_scheduler.Scheduler, "update_draft_token_ids", lambda self, drafts: None)
    monkeypatch.setattr(vllm_scheduler.Scheduler, "_update_after_schedule", lambda self, output: None)


def _plugin(monkeypatch: pytest.MonkeyPatch, *, async_scheduling: bool, max_k: int | None = 4) -> SpecCapScheduler:
    _stub_base(monkeypatch, async_scheduling=async_scheduling, max_k=max_k)
    return SpecCapScheduler()


def _async_plugin(monkeypatch: pytest.MonkeyPatch, max_k: int = 4) -> SpecCapAsyncScheduler:
    _stub_base(monkeypatch, async_scheduling=True, max_k=max_k)
    return SpecCapAsyncScheduler()


def test_each_class_refuses_the_other_mode_and_names_the_right_one(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(SchedulerAPIChanged, match="SpecCapAsyncScheduler"):
        _plugin(monkeypatch, async_scheduling=True)
    _stub_base(monkeypatch, async_scheduling=False, max_k=4)
    with pytest.raises(SchedulerAPIChanged, match=r"vllm_scheduler\.SpecCapScheduler"):
        SpecCapAsyncScheduler()


def _request(drafts: list[int], extra_args: dict[str, Any] | None) -> SimpleNamespace:
    return SimpleNamespace(
        spec_token_ids=list(drafts),
        sampling_params=SimpleNamespace(extra_args=extra_args),
        is_prefill_chunk=False,
        use_structured_output=False,
        num_output_placeholders=0,
    )


def test_caps_each_request_to_its_own_k(monkeypatch: pytest.MonkeyPatch) -> None:
    plugin = _plugin(monkeypatch, async_scheduling=False)
    assert plugin.max_k == 4
    plugin.requests = {
        "off": _request([1, 2, 3, 4], {"num_speculative_tokens": 0}),
        "two": _request([1, 2, 3, 4], {"num_speculative_tokens": 2}),
        "asks-more": _request([1, 2, 3], {"num_speculative_tokens": 9}),
        "none": _request([1, 2, 3, 4], None),
        "bad": _request([1, 2, 3, 4], {"num_speculative_tokens": "many"}),
        "no-drafts": _request([], {"num_speculative_tokens": 0}),
    }
    plugin.update_draft_token_ids(SimpleNamespace(req_ids=[*plugin.requests, "finished-meanwhile"]))
    drafts = {name: r.spec_token_ids for name, r in plugin.requests.items()}
    assert drafts == {
        "off": [],
        "two": [1, 2],
        "asks-more": [1, 2, 3],
        "none": [1, 2, 3, 4],
        "bad": [1, 2, 3, 4],  # malformed: ignored (the engine's own k), counted, never raised
        "no-drafts": [],
    }
    assert plugin.capped_steps == 2 and plugin.malformed_caps == 1


SCHEDULE = {"specgate_k_schedule": "1:4,3:2,5:0"}


@pytest.mark.parametrize(("running", "expected"), [(1, 4), (2, 4), (3, 2), (4, 2), (5, 0), (40, 0)])
def test_sync_schedule_follows_the_live_batch(monkeypatch: pytest.MonkeyPatch, running: int, expected: int) -> None:
    plugin = _plugin(monkeypatch, async_scheduling=False)
    plugin.requests = {
        "r": _request([1, 2, 3, 4], SCHEDULE),
        "capped": _request([1, 2, 3, 4], {**SCHEDULE, "num_speculative_tokens": 1}),
    }
    plugin.running = [object()] * running
    plugin.update_draft_token_ids(SimpleNamespace(req_ids=["r", "capped"]))
    assert len(plugin.requests["r"].spec_token_ids) == expected
    assert len(plugin.requests["capped"].spec_token_ids) == min(1, expected)  # the smaller of cap and schedule


def _output(req_ids: list[str], k: int) -> SimpleNamespace:
    return SimpleNamespace(
        num_scheduled_tokens={r: 1 for r in req_ids},
        num_spec_tokens_to_schedule=k,
        scheduled_spec_decode_tokens={},
        pending_structured_output_tokens=False,
    )


def test_drafting_narrows_to_the_widest_limit_of_the_step(monkeypatch: pytest.MonkeyPatch) -> None:
    plugin = _plugin(monkeypatch, async_scheduling=False)
    plugin.requests = {"a": _request([], SCHEDULE), "b": _request([], {"num_speculative_tokens": 1})}
    out = _output(["a", "b"], 4)  # batch 2: a may use 4
    plugin._update_after_schedule(out)
    assert out.num_spec_tokens_to_schedule == 4 and plugin.narrowed_steps == 0
    plugin.requests["c"] = _request([], SCHEDULE)
    out = _output(["a", "b", "c"], 4)  # batch 3: a and c may use 2, b 1
    plugin._update_after_schedule(out)
    assert out.num_spec_tokens_to_schedule == 2 and plugin.narrowed_steps == 1
    plugin.requests["free"] = _request([], None)  # no limit: the engine's k for everyone's drafting
    out = _output(["a", "b", "c", "free"], 4)
    plugin._update_after_schedule(out)
    assert out.num_spec_tokens_to_schedule == 4


def test_async_placeholders_follow_each_requests_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    plugin = _async_plugin(monkeypatch)
    plugin.requests = {
        "a": _request([], SCHEDULE),
        "b": _request([], {"num_speculative_tokens": 1}),
        "c": _request([], SCHEDULE),
        "d": _request([], {"num_speculative_tokens": 0}),
    }
    out = _output(list(plugin.requests), 4)  # batch 4: the schedule says 2
    plugin._update_after_schedule(out)  # vLLM's AsyncScheduler code runs here, then the plugin's
    assert out.num_spec_tokens_to_schedule == 2
    slots = {name: r.spec_token_ids for name, r in plugin.requests.items()}
    assert slots == {"a": [-1, -1], "b": [-1], "c": [-1, -1], "d": []}
    assert slots["b"] is not slots["d"]  # cut ones are lists of their own, not views of vLLM's shared one
    assert all(r.num_output_placeholders == 1 for r in plugin.requests.values())


def test_engine_without_speculation_caps_everything_to_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    plugin = _plugin(monkeypatch, async_scheduling=False, max_k=None)
    assert plugin.max_k == 0


def test_empty_proposals_of_scheduled_requests_are_recorded_as_steps_without_drafts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """vLLM records only steps that carried drafts; under a schedule a step capped to 0 and a step whose n-gram
    drafter found nothing would look alike. The plugin records the second kind (the request could draft, the
    drafter ran, it proposed nothing) as a step with 0 drafts, in `detailed` per-request metrics only."""
    from vllm.v1.metrics.stats import RequestSpecDecodeMetrics

    _stub_base(monkeypatch, async_scheduling=False, max_k=4)
    monkeypatch.setattr(vllm_scheduler.Scheduler, "spec_decode_metrics_level", "detailed", raising=False)
    plugin = SpecCapScheduler()

    def request(extra: dict[str, Any] | None, *, prefill: bool = False, outputs: int = 3) -> SimpleNamespace:
        r = _request([], extra)
        r.is_prefill_chunk = prefill
        r.num_output_tokens = outputs
        r.is_finished = lambda: False
        r.spec_decode_metrics = RequestSpecDecodeMetrics.new(4)
        return r

    plugin.requests = {
        "may-draft": request(SCHEDULE),
        "capped-to-0": request({"specgate_k_schedule": "1:0"}),
        "fixed-cap": request({"num_speculative_tokens": 2}),
        "no-limit": request(None),
        "prefilling": request(SCHEDULE, prefill=True),
        "first-token": request(SCHEDULE, outputs=0),
    }
    plugin.running = [object()] * 2  # the schedule says k=4 at batch 2
    plugin.update_draft_token_ids(SimpleNamespace(req_ids=list(plugin.requests)))
    recorded = {name: r.spec_decode_metrics.to_dict() for name, r in plugin.requests.items()}
    assert recorded["may-draft"]["per_step_drafted"] == [0] and recorded["may-draft"]["num_spec_steps"] == 1
    assert all(recorded[n]["num_spec_steps"] == 0 for n in recorded if n != "may-draft")
    assert plugin.empty_proposals == 1
    plugin.drafting_k = 0  # the last step's drafter was told to draft nothing: nothing could be proposed
    plugin.update_draft_token_ids(SimpleNamespace(req_ids=["may-draft"]))
    assert plugin.empty_proposals == 1
    monkeypatch.setattr(vllm_scheduler.Scheduler, "spec_decode_metrics_level", "summary", raising=False)
    summary = SpecCapScheduler()
    summary.requests, summary.running = {"may-draft": request(SCHEDULE)}, [object()]
    summary.update_draft_token_ids(SimpleNamespace(req_ids=["may-draft"]))
    assert summary.empty_proposals == 0  # vLLM's own accounting stays as it is below `detailed`
