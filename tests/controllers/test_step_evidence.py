from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from specgate.controllers.step_evidence import MIN_REQUEST_STEPS, interval_sample


def test_the_interval_gives_the_mean_batch_drafts_and_step_time() -> None:
    s = interval_sample(100, 2000, 30.0, 4000, 2.0)
    assert s is not None
    assert (s.batch, s.kbar, s.kmax, s.step_s, s.drafter_share) == (20.0, 2.0, 2.0, 0.015, 1.0)


def test_an_interval_that_ran_too_little_says_nothing() -> None:
    assert interval_sample(10, MIN_REQUEST_STEPS - 1, 1.0, 0, 0) is None
    assert interval_sample(0, 1000, 1.0, 0, 0) is None
    assert interval_sample(100, 1000, 0.0, 0, 0) is None


def test_explorers_in_a_batch_the_schedules_keep_from_drafting_count_as_steps_the_drafter_ran() -> None:
    """The schedules draft nothing at batch 150, but 30 request-steps drafted k = 4 (an explorer in 30 of 100
    steps): the drafter ran in 30% of the steps, at k = 4 there, 1.2 on average."""
    s = interval_sample(100, 15000, 225.0, 120, 0.0, drafts=30)
    assert s is not None
    assert s.drafter_share == pytest.approx(0.3)
    assert s.kmax == pytest.approx(1.2)
    assert s.kbar == pytest.approx(120 / 15000)


def test_where_the_schedule_drafts_every_step_runs_the_drafter() -> None:
    s = interval_sample(100, 1500, 20.0, 3000, 2.0, drafts=1500)
    assert s is not None and (s.kmax, s.drafter_share) == (2.0, 1.0)


def test_no_drafts_no_drafter() -> None:
    s = interval_sample(100, 15000, 225.0, 0, 0.0, drafts=0)
    assert s is not None and (s.kmax, s.drafter_share) == (0.0, 0.0)


@given(
    st.floats(1, 1e4),
    st.floats(50, 1e6),
    st.floats(1e-3, 1e3),
    st.floats(0, 1e6),
    st.integers(0, 7),
    st.one_of(st.none(), st.floats(0, 1e6)),
)
def test_a_sample_is_always_one_the_cost_model_takes(
    iterations: float, request_steps: float, itl: float, draft_tokens: float, kmax: int, drafts: float | None
) -> None:
    s = interval_sample(iterations, request_steps, itl, draft_tokens, kmax, drafts)
    assert s is not None
    assert s.batch >= 1 and s.kbar >= 0 and s.kmax >= 0 and s.step_s > 0
    assert 0.0 <= s.drafter_share <= 1.0
    assert s.kmax <= max(kmax, draft_tokens / drafts if drafts else 0.0) + 1e-9
