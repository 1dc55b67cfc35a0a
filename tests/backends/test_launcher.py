"""The engine command line the launcher builds (no engine started here; tests/backends/*_vllm.py start real ones)."""

from __future__ import annotations

import json

import pytest
from specgate.backends.launcher import EngineSpec, engine_command, parse_k_per_batch_size


def _speculative_config(spec: EngineSpec) -> dict:
    cmd = engine_command(spec)
    return json.loads(cmd[cmd.index("--speculative-config") + 1])


def test_the_engines_own_batch_size_table_goes_into_its_speculative_config() -> None:
    table = parse_k_per_batch_size("1-24:2, 25-2048:0")
    assert table == ((1, 24, 2), (25, 2048, 0))
    config = _speculative_config(EngineSpec(k_per_batch_size=table))
    assert config["num_speculative_tokens_per_batch_size"] == [[1, 24, 2], [25, 2048, 0]]
    assert "num_speculative_tokens_per_batch_size" not in _speculative_config(EngineSpec())


@pytest.mark.parametrize("text", ["2-8:1", "1-8:1,10-20:0", "1-8:1,5-20:0", "1-8", "1-8:x", "8-1:2", ""])
def test_a_table_vllm_would_refuse_is_refused_first(text: str) -> None:
    with pytest.raises(ValueError):
        parse_k_per_batch_size(text)


def test_a_speculators_checkpoint_is_served_as_the_model_with_the_plugin() -> None:
    """vLLM reads the verifier, method and k from a Speculators checkpoint: no --speculative-config is passed."""
    from pathlib import Path

    from specgate.backends.launcher import PLUGIN_CLASS, EngineSpec, engine_command

    cmd = engine_command(EngineSpec(model_dir=Path("/m/eagle3"), speculation="speculators", max_k=3))
    assert cmd[cmd.index("--model") + 1] == "/m/eagle3" and "--speculative-config" not in cmd
    assert cmd[cmd.index("--scheduler-cls") + 1] == PLUGIN_CLASS
    assert cmd[cmd.index("--per-request-spec-decode-metrics") + 1] == "detailed"
    plain = engine_command(EngineSpec(speculation="none", max_k=0))
    assert "--scheduler-cls" not in plain and "--per-request-spec-decode-metrics" not in plain
