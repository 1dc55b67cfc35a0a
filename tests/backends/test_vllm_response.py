from __future__ import annotations

import pytest
from specgate.backends.vllm_response import is_usage_event, parse_spec_metrics, parse_usage
from specgate.controllers.observations import SpecStats

GOOD = {
    "metrics": {
        "speculative_decoding": {
            "mean_acceptance_length": 2.125,
            "draft_acceptance_rate": 0.28,
            "acceptance_histogram": [5, 1, 0, 0, 2],
            "num_spec_steps": 8,
            "num_accepted_draft_tokens": 9,
            "num_draft_tokens": 32,
            "num_spec_tokens": 4,
        }
    },
    "usage": {"prompt_tokens": 7, "completion_tokens": 40},
}


def test_parse_good() -> None:
    assert parse_spec_metrics(GOOD) == SpecStats(32, 9, 8, (5, 1, 0, 0, 2))
    assert parse_usage(GOOD) == (7, 40)


def test_detailed_per_step_arrays_group_steps_by_their_drafts() -> None:
    """Under a k schedule the drafts per step vary: each step is filed under the drafts it had, none under the
    request's max. vLLM lists only steps with drafts; a 0 is the plugin's record of a step whose drafter proposed
    nothing, filed under k 0 (the controller counts it as a rejection at position 1 and as a step without a
    proposal)."""
    sd = dict(GOOD["metrics"]["speculative_decoding"])  # type: ignore[index]  # a literal of known shape
    sd.update(per_step_drafted=[4, 4, 2, 0, 2, 4], per_step_accepted=[4, 1, 2, 0, 0, 0])
    stats = parse_spec_metrics({"metrics": {"speculative_decoding": sd}})
    assert stats is not None
    assert stats.by_k == ((0, (1,)), (2, (1, 0, 1)), (4, (1, 1, 0, 0, 1)))
    for drafted, accepted in (([4, 2], [1]), ([4, "x"], [1, 1]), ([2], [3]), (None, [1]), ([-1], [0])):
        sd.update(per_step_drafted=drafted, per_step_accepted=accepted)
        broken = parse_spec_metrics({"metrics": {"speculative_decoding": sd}})
        assert broken is not None and broken.by_k == () and broken.histogram == (5, 1, 0, 0, 2)


@pytest.mark.parametrize(
    "obj",
    [
        None,
        [],
        {},
        {"metrics": None},
        {"metrics": {"speculative_decoding": "x"}},
        {"metrics": {"speculative_decoding": {"num_draft_tokens": 3}}},
        {
            "metrics": {
                "speculative_decoding": {
                    "num_draft_tokens": 3,
                    "num_accepted_draft_tokens": 4,
                    "num_spec_steps": 1,
                }
            }
        },
        {
            "metrics": {
                "speculative_decoding": {
                    "num_draft_tokens": -1,
                    "num_accepted_draft_tokens": 0,
                    "num_spec_steps": 1,
                }
            }
        },
        {
            "metrics": {
                "speculative_decoding": {
                    "num_draft_tokens": True,
                    "num_accepted_draft_tokens": 0,
                    "num_spec_steps": 1,
                }
            }
        },
    ],
)
def test_parse_defensive(obj: object) -> None:
    assert parse_spec_metrics(obj) is None


def test_inconsistent_histogram_is_dropped_not_fatal() -> None:
    obj = {
        "metrics": {
            "speculative_decoding": {
                "num_draft_tokens": 8,
                "num_accepted_draft_tokens": 2,
                "num_spec_steps": 2,
                "acceptance_histogram": [9, "x"],
            }
        }
    }
    assert parse_spec_metrics(obj) == SpecStats(8, 2, 2, ())


def test_usage_event_precheck() -> None:
    assert is_usage_event(b'{"id":"x","choices":[],"usage":{"prompt_tokens":1}}')
    assert not is_usage_event(b'{"id":"x","choices":[{"delta":{}}]}')
    assert parse_usage({"usage": "no"}) == (0, 0)
