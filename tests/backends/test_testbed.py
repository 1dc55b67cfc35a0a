"""The knee test model: made from the tiny one, the same function (checked on logits and greedy tokens), heavy."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file
from specgate.backends.testbed import DRAFTER_DIR, TINY_MODEL_DIR, KneeRecipe, ensure_knee_model

SMALL = KneeRecipe(intermediate_size=1024)


def test_new_neurons_are_real_weights_with_zero_output(tmp_path: Path) -> None:
    out = ensure_knee_model(tmp_path / "knee", recipe=SMALL)
    tiny = load_file(str(TINY_MODEL_DIR / "model.safetensors"))
    knee = load_file(str(out / "model.safetensors"))
    assert set(knee) == set(tiny)
    for name, value in tiny.items():
        if name.endswith(("gate_proj.weight", "up_proj.weight")):
            assert knee[name].shape == (1024, 128)
            assert np.array_equal(knee[name][:384], value) and np.abs(knee[name][384:]).mean() > 0.005
        elif name.endswith("down_proj.weight"):
            assert knee[name].shape == (128, 1024)
            assert np.array_equal(knee[name][:, :384], value) and not knee[name][:, 384:].any()
        else:
            assert np.array_equal(knee[name], value)
    assert json.loads((out / "config.json").read_text())["intermediate_size"] == 1024
    assert (out / "tokenizer.json").read_bytes() == (TINY_MODEL_DIR / "tokenizer.json").read_bytes()


def test_built_once_and_rebuilt_when_the_recipe_changes(tmp_path: Path) -> None:
    target = tmp_path / "knee"
    weights = ensure_knee_model(target, recipe=SMALL) / "model.safetensors"
    first = weights.stat().st_mtime_ns
    assert ensure_knee_model(target, recipe=SMALL) == target and weights.stat().st_mtime_ns == first
    ensure_knee_model(target, recipe=KneeRecipe(intermediate_size=768))
    assert json.loads((target / "config.json").read_text())["intermediate_size"] == 768
    assert not list(tmp_path.glob("*.tmp-*"))  # no staging directory left behind


def test_a_recipe_that_does_not_widen_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="must exceed"):
        ensure_knee_model(tmp_path / "knee", recipe=KneeRecipe(intermediate_size=384))


@pytest.mark.slow
def test_the_knee_model_computes_the_tiny_models_function(tmp_path: Path) -> None:
    """Full size (what `--testbed knee` serves): same logits up to float rounding, same greedy tokens."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    knee_dir = ensure_knee_model(tmp_path / "knee")
    tokenizer = transformers.AutoTokenizer.from_pretrained(TINY_MODEL_DIR)
    tiny = transformers.AutoModelForCausalLM.from_pretrained(TINY_MODEL_DIR, dtype=torch.float32).eval()
    knee = transformers.AutoModelForCausalLM.from_pretrained(knee_dir, dtype=torch.float32).eval()
    prompts = ["def add(a, b):\n    return", "The quick brown fox", "Summarise: the meeting moved to Tuesday."]
    with torch.no_grad():
        for prompt in prompts:
            ids = tokenizer(prompt, return_tensors="pt").input_ids
            a, b = tiny(ids).logits, knee(ids).logits
            assert torch.allclose(a, b, atol=1e-4, rtol=1e-4), float((a - b).abs().max())
            ga = tiny.generate(ids, max_new_tokens=32, do_sample=False)
            gb = knee.generate(ids, max_new_tokens=32, do_sample=False)
            assert torch.equal(ga, gb)


def test_the_drafter_shares_the_tiny_models_vocabulary_and_is_smaller() -> None:
    """A draft model must speak its target's tokens; it must also cost less to run."""
    drafter = json.loads((DRAFTER_DIR / "config.json").read_text())
    target = json.loads((TINY_MODEL_DIR / "config.json").read_text())
    assert (DRAFTER_DIR / "tokenizer.json").read_bytes() == (TINY_MODEL_DIR / "tokenizer.json").read_bytes()
    assert drafter["vocab_size"] == target["vocab_size"]
    assert drafter["hidden_size"] * drafter["num_hidden_layers"] < target["hidden_size"] * target["num_hidden_layers"]
    report = json.loads((DRAFTER_DIR / "training_report.json").read_text())
    assert report["corpus"] != "stdlib-modules" and report["distilled_from"]  # another mix, the target's answers
