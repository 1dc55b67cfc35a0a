"""Verified engine capabilities against the pool's config (controllers/capabilities.py)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from specgate.controllers.capabilities import CAPABILITIES, EngineFacts, Expected, lost, mismatches, plugin_verdict

EXPECTED = Expected("m", speculation=True, max_k=4, plugin=True, tested_versions=("0.32.0",))
MATCHING = EngineFacts("vllm", "0.32.0", ("m",), True, 4, True, True)

maybe = st.sampled_from([True, False, None])
facts = st.builds(
    EngineFacts,
    st.just("vllm"),
    st.sampled_from([None, "0.32.0", "0.32.0+cpu", "0.33.1"]),
    st.sampled_from([(), ("m",), ("other",)]),
    maybe,
    st.sampled_from([None, 2, 4]),
    maybe,
    maybe,
)


def test_plugin_verdict() -> None:
    assert plugin_verdict(3, None) is False  # capped at 0 and still drafting: the cap was ignored
    assert plugin_verdict(0, 12) is True
    assert plugin_verdict(0, 0) is None  # nothing proposed either way: cannot tell
    assert plugin_verdict(0, None) is None
    assert plugin_verdict(None, 12) is None


def test_a_matching_engine_has_no_mismatch() -> None:
    assert mismatches(EXPECTED, MATCHING) == []
    assert mismatches(EXPECTED, EngineFacts("vllm", "0.32.0+cpu", ("m", "n"), True, 4, True, True)) == []


def test_each_contradiction_is_named() -> None:
    def one(**changes: object) -> str:
        fields = {**MATCHING.as_dict(), "models": MATCHING.models, **changes}
        fields.pop("checked_at")
        (found,) = mismatches(EXPECTED, EngineFacts(**fields))  # type: ignore[arg-type]
        return found

    assert "not the pool's model m" in one(models=("x",))
    assert "engine has none" in one(speculation=False)
    assert "max k is 2" in one(max_k=2)
    assert "no plugin" in one(plugin=False)
    assert "--per-request-spec-decode-metrics" in one(per_request_metrics=False)
    assert "0.33.0 is not a tested version" in one(version="0.33.0")
    stock = Expected("m", speculation=False, max_k=0, plugin=False)
    assert mismatches(stock, EngineFacts("vllm", speculation=True)) == [
        "the config says no speculation; the engine drafts"
    ]


@given(facts)
def test_unknowns_never_make_a_mismatch(f: EngineFacts) -> None:
    """Only verified facts contradict the config: replacing any fact by "unknown" never adds a mismatch."""
    unknown = EngineFacts(f.engine, None, (), None, None, None, None)
    assert mismatches(EXPECTED, unknown) == []
    for name in ("version", "speculation", "max_k", "per_request_metrics", "plugin"):
        fields = {**f.as_dict(), "models": f.models, name: None}
        fields.pop("checked_at")
        fewer = mismatches(EXPECTED, EngineFacts(**fields))  # type: ignore[arg-type]
        assert set(fewer) <= set(mismatches(EXPECTED, f))


@given(facts, facts)
def test_lost_names_only_capabilities_verified_then_refuted(before: EngineFacts, after: EngineFacts) -> None:
    gone = lost(before, after)
    assert set(gone) <= set(CAPABILITIES)
    for name in CAPABILITIES:
        assert (name in gone) == (getattr(before, name) is True and getattr(after, name) is False)
    assert lost(None, after) == []
