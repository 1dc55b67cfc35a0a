"""The scheduler plugin's own logic, with vLLM's Scheduler base stubbed out where it would need a whole engine:
the API guard, the refusal under async scheduling, and the per-request cap on drafts. The plugin on a real engine:
tests/backends/test_speculation_vllm.py."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from specgate.backends import vllm_scheduler
from specgate.backends.vllm_scheduler import SchedulerAPIChanged, SpecCapScheduler


def test_api_guard_accepts_the_tested_vllm() -> None:
    vllm_scheduler._check_api()


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


def _plugin(monkeypatch: pytest.MonkeyPatch, *, async_scheduling: bool, max_k: int | None = 4) -> SpecCapScheduler:
    def base_init(self: Any, *args: Any, **kwargs: Any) -> None:
        self.vllm_config = SimpleNamespace(
            scheduler_config=SimpleNamespace(async_scheduling=async_scheduling),
            speculative_config=None if max_k is None else SimpleNamespace(num_speculative_tokens=max_k),
        )
        self.requests = {}

    monkeypatch.setattr(vllm_scheduler.Scheduler, "__init__", base_init)
    monkeypatch.setattr(vllm_scheduler.Scheduler, "update_draft_token_ids", lambda self, drafts: None)
    return SpecCapScheduler()


def test_refuses_async_scheduling(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(SchedulerAPIChanged, match="async scheduling"):
        _plugin(monkeypatch, async_scheduling=True)


def _request(drafts: list[int], extra_args: dict[str, Any] | None) -> SimpleNamespace:
    return SimpleNamespace(spec_token_ids=list(drafts), sampling_params=SimpleNamespace(extra_args=extra_args))


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


def test_engine_without_speculation_caps_everything_to_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    plugin = _plugin(monkeypatch, async_scheduling=False, max_k=None)
    assert plugin.max_k == 0
