"""Load and save classifier model files (`.npz`, no pickles) and labelled JSONL data.

The bundled model is package data of `specgate.controllers` (`controllers/data/route-classifier.npz`), read
through `importlib.resources` so that it is found the same way in a checkout, an editable install and a wheel.
"""

from __future__ import annotations

import json
import zipfile
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path

import numpy as np
from specgate.controllers.classifier import ClassifierModel, classification_text

__all__ = [
    "BUNDLED_MODEL",
    "HELD_OUT_DATA",
    "ClassifierLoadError",
    "load_labelled",
    "load_model",
    "save_model",
]

BUNDLED_MODEL: Traversable = files("specgate.controllers") / "data" / "route-classifier.npz"
# The labelled data sets live in the source checkout (data/classifier/), not in the wheel.
HELD_OUT_DATA = Path(__file__).resolve().parent.parent / "data" / "classifier" / "test.jsonl"


class ClassifierLoadError(Exception):
    pass


def load_model(path: str | Path | Traversable) -> ClassifierModel:
    try:
        with (
            path.open("rb") if isinstance(path, Traversable) else open(path, "rb") as f,
            np.load(f, allow_pickle=False) as data,
        ):
            arrays = {key: data[key] for key in data.files}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise ClassifierLoadError(f"cannot read classifier model {path}: {exc}") from None
    try:
        return ClassifierModel.from_arrays(arrays)
    except ValueError as exc:
        raise ClassifierLoadError(f"{path}: {exc}") from None


def save_model(model: ClassifierModel, path: str | Path) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        np.savez_compressed(f, **model.to_arrays())  # type: ignore[arg-type]  # numpy's stubs take **arrays for allow_pickle


def load_labelled(path: str | Path) -> tuple[list[str], list[str]]:
    """(texts, labels) from JSONL rows {"label": ..., "messages": [...] | "prompt": ...}."""
    texts: list[str] = []
    labels: list[str] = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{number}: not JSON: {exc}") from None
            if not isinstance(row, dict) or not isinstance(row.get("label"), str):
                raise ValueError(f"{path}:{number}: each row needs a string 'label'")
            texts.append(classification_text(row))
            labels.append(row["label"])
    return texts, labels
