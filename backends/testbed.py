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

__all__ = ["KNEE_MODEL_DIR", "TESTBEDS", "KneeRecipe", "Testbed", "ensure_knee_model"]

MODELS_DIR = Path(__file__).resolve().parent.parent / "models"
TINY_MODEL_DIR = MODELS_DIR / "specgate-tiny-llama"
KNEE_MODEL_DIR = MODELS_DIR / "specgate-knee-llama"
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
