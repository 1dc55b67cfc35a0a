"""What an engine endpoint can do, as verified, against what its pool's config says it does. Pure.

The gateway learns the facts (backends/capabilities.py: `/version`, `/v1/models`, `/metrics` and two probe
requests) and the rest of specgate acts only on what was verified: an endpoint whose plugin did not take a cap is
a stock engine, whatever the config says, and no request sent there is reported as capped.

Each capability is True (verified present), False (verified absent) or None (could not tell: the engine was busy,
the probe was off, the endpoint did not answer).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["CAPABILITIES", "EngineFacts", "Expected", "lost", "mismatches", "plugin_verdict"]


# The yes/no capabilities, as named in metrics and `lost`.
CAPABILITIES = ("speculation", "per_request_metrics", "plugin")


@dataclass(frozen=True, slots=True)
class EngineFacts:
    engine: str
    version: str | None = None
    models: tuple[str, ...] = ()
    # The engine drafts (its speculation counters exist).
    speculation: bool | None = None
    # The drafter's k (from the per-position acceptance counters).
    max_k: int | None = None
    # Responses carry `metrics.speculative_decoding` (`--per-request-spec-decode-metrics`).
    per_request_metrics: bool | None = None
    # specgate's scheduler plugin took a cap: a probe capped at 0 drafted nothing while one at max k drafted.
    plugin: bool | None = None
    # Why something could not be learnt (the first error met), for operators.
    error: str | None = None
    # Wall-clock time of the discovery (seconds since the epoch).
    checked_at: float = 0.0

    def as_dict(self) -> dict[str, object]:
        return {
            "engine": self.engine,
            "version": self.version,
            "models": list(self.models),
            "speculation": self.speculation,
            "max_k": self.max_k,
            "per_request_metrics": self.per_request_metrics,
            "plugin": self.plugin,
            "error": self.error,
            "checked_at": self.checked_at,
        }


@dataclass(frozen=True, slots=True)
class Expected:
    """What a pool's config says its engines are (plain values: controllers do not import the config)."""

    model: str
    speculation: bool
    max_k: int
    plugin: bool
    tested_versions: Sequence[str] = ()


def plugin_verdict(capped_drafts: int | None, full_drafts: int | None) -> bool | None:
    """From the drafts of a probe capped at k=0 and of one at the engine's max k (None: not measured).

    Capped at 0 and still drafting: the cap was ignored, no plugin. Nothing drafted at 0 while the uncapped probe
    drafted: the plugin cut it. Nothing drafted by either: the drafter proposed nothing for the probe, no verdict."""
    if capped_drafts is None:
        return None
    if capped_drafts > 0:
        return False
    if full_drafts is None or full_drafts == 0:
        return None
    return True


def _base_version(version: str) -> str:
    # vLLM builds carry a local part (0.32.0+cpu): what was tested is the release.
    return version.split("+", 1)[0]


def mismatches(expected: Expected, facts: EngineFacts) -> list[str]:
    """What the endpoint contradicts in its pool's config, one sentence each. Only verified facts count: an
    unknown never makes a mismatch."""
    found: list[str] = []
    if facts.models and expected.model not in facts.models:
        found.append(f"serves {', '.join(facts.models)}, not the pool's model {expected.model}")
    if expected.speculation and facts.speculation is False:
        found.append("the config says speculation is on; the engine has none")
    if not expected.speculation and facts.speculation is True:
        found.append("the config says no speculation; the engine drafts")
    if expected.speculation and facts.max_k is not None and facts.max_k and facts.max_k != expected.max_k:
        found.append(f"the engine's max k is {facts.max_k}; the config says {expected.max_k}")
    if expected.plugin and facts.plugin is False:
        found.append("the config says the scheduler plugin is loaded; a cap of 0 was not applied (no plugin)")
    if expected.plugin and expected.speculation and facts.per_request_metrics is False:
        found.append("no per-request speculation metrics (--per-request-spec-decode-metrics is off)")
    tested = tuple(expected.tested_versions)
    if tested and facts.version is not None and _base_version(facts.version) not in tested:
        found.append(f"vLLM {facts.version} is not a tested version ({', '.join(tested)})")
    return found


def lost(before: EngineFacts | None, after: EngineFacts) -> list[str]:
    """Capabilities verified present before and verified absent now (an engine restarted with other flags)."""
    if before is None:
        return []
    return [n for n in CAPABILITIES if getattr(before, n) is True and getattr(after, n) is False]
