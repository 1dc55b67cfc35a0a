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
