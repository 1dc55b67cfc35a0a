"""Test engines made here: `tiny` (the committed 0.95 M-parameter model) and `knee`, the same model made heavy so
that a CPU engine has a GPU-like step-time curve.

On the tiny model a step costs per-request overhead and speculation pays at every load, so the trade-off specgate
is about (drafts nearly free at small batch, costly past a knee) never shows. The knee model widens the tiny model's
MLPs from 384 to `intermediate_size` neurons: the new neurons' output weights (`down_proj` columns) are zero, so
they add exactly nothing and the model computes the tiny model's function, while every step reads all their weights
(hundreds of MB, far more than the caches) and multiplies through them. At small batch a step is bound by reading
the weights and a few more tokens are nearly free; past a handful of tokens per step the multiplications dominate.

The model is generated, not committed: `ensure_knee_model()` writes it under models/ on first use (seconds) and
rewrites it when the tiny model or the recipe changes.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = [
    "DRAFTER_DIR",
    "EAGLE3_DIR",
    "KNEE_MODEL_DIR",
    "TESTBEDS",
    "KneeRecipe",
    "Testbed",
    "ensure_eagle3_checkpoint",
    "ensure_knee_model",
]

MODELS_DIR = Path(__file__).resolve().parent.parent / "models"
TINY_MODEL_DIR = MODELS_DIR / "specgate-tiny-llama"
# A drafter for the tiny and knee models trained on another mix than theirs (committed; docs/testbeds.md).
DRAFTER_DIR = MODELS_DIR / "specgate-tiny-drafter"
KNEE_MODEL_DIR = MODELS_DIR / "specgate-knee-llama"
EAGLE3_DIR = MODELS_DIR / "specgate-tiny-eagle3"
_RECIPE_FILE = "specgate-recipe.json"
# Files copied unchanged from the tiny model (the tokenizer and chat template are the same).
_COPIED = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "generation_config.json")


@dataclass(frozen=True, slots=True)
class KneeRecipe:
    """How the knee model is made from the tiny one."""

    intermediate_size: int = 65536
    # Scale of the new neurons' input weights (seeded): real values, so nothing downstream can skip them.
    init_std: float = 0.02
    seed: int = 0

    def key(self, source_digest: str) -> dict[str, object]:
        return {
            "intermediate_size": self.intermediate_size,
            "init_std": self.init_std,
            "seed": self.seed,
            "source_sha256": source_digest,
        }


@dataclass(frozen=True, slots=True)
class Testbed:
    """A named engine set-up for `specgate engine up --testbed NAME`."""

    name: str
    description: str


TESTBEDS = {
    "tiny": Testbed("tiny", "the committed tiny model (speculation pays at every load)"),
    "knee": Testbed(
        "knee",
        "the tiny model widened to a GPU-like cost curve (memory-bound at small batch, compute-bound past a knee; "
        "generated under models/ on first use)",
    ),
    "eagle3": Testbed(
        "eagle3",
        "the tiny model with an EAGLE-3 draft head in Red Hat Speculators format (vLLM reads the verifier and k from "
        "the checkpoint; untrained head: it drafts, nothing is accepted; generated under models/ on first use)",
    ),
}


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _widened(
    tensors: dict[str, npt.NDArray[Any]], hidden: int, old: int, recipe: KneeRecipe
) -> dict[str, npt.NDArray[Any]]:
    rng = np.random.default_rng(recipe.seed)
    extra = recipe.intermediate_size - old
    out: dict[str, npt.NDArray[Any]] = {}
    for name, array in tensors.items():
        if name.endswith(("mlp.gate_proj.weight", "mlp.up_proj.weight")):
            assert array.shape == (old, hidden), (name, array.shape)
            new = rng.normal(0.0, recipe.init_std, size=(extra, hidden)).astype(array.dtype)
            array = np.concatenate([array, new], axis=0)
        elif name.endswith("mlp.down_proj.weight"):
            assert array.shape == (hidden, old), (name, array.shape)
            # Zero output weights: the new neurons add exactly 0.0 to the residual stream.
            array = np.concatenate([array, np.zeros((hidden, extra), dtype=array.dtype)], axis=1)
        out[name] = np.ascontiguousarray(array)
    return out


def ensure_knee_model(
    target: Path = KNEE_MODEL_DIR, source: Path = TINY_MODEL_DIR, recipe: KneeRecipe | None = None
) -> Path:
    """The knee model's directory, written first if missing or made from another source or recipe."""
    from safetensors.numpy import load_file, save_file

    recipe = recipe or KneeRecipe()
    key = recipe.key(_digest(source / "model.safetensors"))
    marker = target / _RECIPE_FILE
    if marker.is_file() and json.loads(marker.read_text(encoding="utf-8")) == key:
        return target
    config = json.loads((source / "config.json").read_text(encoding="utf-8"))
    hidden, old = int(config["hidden_size"]), int(config["intermediate_size"])
    if recipe.intermediate_size <= old:
        raise ValueError(f"intermediate_size {recipe.intermediate_size} must exceed the tiny model's {old}")
    tensors = _widened(dict(load_file(str(source / "model.safetensors"))), hidden, old, recipe)
    config["intermediate_size"] = recipe.intermediate_size
    # Written beside the target and renamed into place: a crash never leaves a half-written model that looks whole.
    staging = target.with_name(target.name + f".tmp-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    save_file(tensors, str(staging / "model.safetensors"), metadata={"format": "pt"})
    (staging / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    for name in _COPIED:
        if (source / name).is_file():
            shutil.copy2(source / name, staging / name)
    (staging / _RECIPE_FILE).write_text(json.dumps(key, indent=2) + "\n", encoding="utf-8")
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    return target


# The tiny model's three decoder-layer taps that feed EAGLE-3's fc (vLLM's Llama default, (2, L // 2, L - 3), gives
# only two distinct states with two layers).
_EAGLE3_AUX_LAYERS = (0, 1, 2)


def _eagle3_weights(source: Path, config: dict[str, Any], seed: int) -> dict[str, npt.NDArray[Any]]:
    """One decoder layer over the verifier's hidden states (speculators' names), small seeded weights; embedding and
    lm_head copied from the verifier (vLLM then shares the target's)."""
    from safetensors.numpy import load_file

    hidden, inter = int(config["hidden_size"]), int(config["intermediate_size"])
    heads, kv_heads, head_dim = (int(config[k]) for k in ("num_attention_heads", "num_key_value_heads", "head_dim"))
    rng = np.random.default_rng(seed)

    def w(*shape: int) -> npt.NDArray[Any]:
        return np.ascontiguousarray(rng.normal(0.0, 0.02, size=shape).astype(np.float32))

    embedding = load_file(str(source / "model.safetensors"))["model.embed_tokens.weight"].astype(np.float32)
    ones = np.ones(hidden, dtype=np.float32)
    layer = "layers.0."
    return {
        "embed_tokens.weight": embedding.copy(),
        "fc.weight": w(hidden, len(_EAGLE3_AUX_LAYERS) * hidden),
        layer + "hidden_norm.weight": ones.copy(),
        layer + "input_layernorm.weight": ones.copy(),
        layer + "post_attention_layernorm.weight": ones.copy(),
        # EAGLE-3's attention reads the token embedding and the fused hidden state side by side: 2 x hidden inputs.
        layer + "self_attn.q_proj.weight": w(heads * head_dim, 2 * hidden),
        layer + "self_attn.k_proj.weight": w(kv_heads * head_dim, 2 * hidden),
        layer + "self_attn.v_proj.weight": w(kv_heads * head_dim, 2 * hidden),
        layer + "self_attn.o_proj.weight": w(hidden, heads * head_dim),
        layer + "mlp.gate_proj.weight": w(inter, hidden),
        layer + "mlp.up_proj.weight": w(inter, hidden),
        layer + "mlp.down_proj.weight": w(hidden, inter),
        "norm.weight": ones.copy(),
        "lm_head.weight": embedding.copy(),
    }


def _speculators_config(config: dict[str, Any], verifier: Path, k: int) -> dict[str, Any]:
    """The checkpoint's config.json in Red Hat Speculators' format: vLLM takes the verifier (the target model), the
    algorithm and the default k from `speculators_config`."""
    keys = (
        "vocab_size", "hidden_size", "intermediate_size", "num_attention_heads", "num_key_value_heads", "head_dim",
        "hidden_act", "max_position_embeddings", "rms_norm_eps", "rope_parameters", "attention_bias", "mlp_bias",
        "bos_token_id", "eos_token_id", "pad_token_id",
    )  # fmt: skip
    layer = {key: config[key] for key in keys if key in config}
    layer.update(
        architectures=["LlamaForCausalLM"],
        model_type="llama",
        num_hidden_layers=1,
        tie_word_embeddings=False,
        dtype="float32",
    )
    return {
        "architectures": ["Eagle3Speculator"],
        "speculators_model_type": "eagle3",
        "speculators_version": "0.3.0",
        "dtype": "float32",
        "transformer_layer_config": layer,
        "draft_vocab_size": int(config["vocab_size"]),
        "norm_before_residual": False,
        "target_hidden_size": None,
        "eagle_aux_hidden_state_layer_ids": list(_EAGLE3_AUX_LAYERS),
        "speculators_config": {
            "algorithm": "eagle3",
            "default_proposal_method": "greedy",
            "proposal_methods": [
                {"proposal_type": "greedy", "speculative_tokens": k, "verifier_accept_k": 1, "accept_tolerance": 0.0}
            ],
            "verifier": {"name_or_path": str(verifier), "architectures": config["architectures"]},
        },
    }


def ensure_eagle3_checkpoint(
    target: Path = EAGLE3_DIR, verifier: Path = TINY_MODEL_DIR, k: int = 3, seed: int = 0
) -> Path:
    """A Speculators-format EAGLE-3 draft for the tiny model, written first if missing or made for another verifier
    (its absolute path is in the checkpoint), k or seed. Serve it with `--model TARGET` alone."""
    from safetensors.numpy import save_file

    key = {"verifier": str(verifier.resolve()), "source_sha256": _digest(verifier / "model.safetensors"), "k": k}
    key["seed"] = seed
    marker = target / _RECIPE_FILE
    if marker.is_file() and json.loads(marker.read_text(encoding="utf-8")) == key:
        return target
    config = json.loads((verifier / "config.json").read_text(encoding="utf-8"))
    staging = target.with_name(target.name + f".tmp-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    save_file(_eagle3_weights(verifier, config, seed), str(staging / "model.safetensors"), metadata={"format": "pt"})
    speculators = _speculators_config(config, verifier.resolve(), k)
    (staging / "config.json").write_text(json.dumps(speculators, indent=2) + "\n", encoding="utf-8")
    (staging / _RECIPE_FILE).write_text(json.dumps(key, indent=2) + "\n", encoding="utf-8")
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    return target
