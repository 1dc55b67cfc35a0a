from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from specgate.controllers.classifier import ClassifierModel, classification_text, confusion, train

TEXTS = [
    "def f(x): return x",
    "class A: pass",
    "import os\nos.path",
    "for i in range(3): print(i)",
    "hello how are you",
    "tell me a joke",
    "what a lovely day",
    "are you happy today",
]
LABELS = ["code"] * 4 + ["chat"] * 4


def small_model() -> ClassifierModel:
    return train(TEXTS, LABELS, label_set=("code", "chat"), dim=1 << 12, epochs=20)


def test_learns_and_predicts() -> None:
    model = small_model()
    assert model.predict("def g(y): return y")[0] == "code"
    assert model.predict("how are you today my friend")[0] == "chat"
    _, accuracy = confusion(model, TEXTS, LABELS)
    assert accuracy == 1.0


def test_training_is_deterministic() -> None:
    a, b = small_model(), small_model()
    assert np.array_equal(a.weights, b.weights) and np.array_equal(a.bias, b.bias)


def test_round_trip_through_arrays_keeps_predictions() -> None:
    model = small_model()
    again = ClassifierModel.from_arrays(model.to_arrays())
    for text in TEXTS:
        assert again.predict(text)[0] == model.predict(text)[0]


def test_features_are_stable_across_processes() -> None:
    # The committed weights depend on bucket ids: they must not change with PYTHONHASHSEED or the process.
    code = (
        "from specgate.controllers.classifier import ClassifierModel; import numpy as np;"
        "m = ClassifierModel(('a','b'), np.zeros((2, 1 << 12), np.float32), np.zeros(2, np.float32));"
        "print(m.features('Stable hashing, please!').tolist())"
    )
    runs = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": str(seed), "PYTHONPATH": "."},
        ).stdout
        for seed in (1, 2)
    }
    assert len(runs) == 1


@pytest.mark.parametrize(
    "arrays",
    [
        {},
        {
            "labels": np.array(["a"]),
            "weights": np.zeros((2, 8)),
            "bias": np.zeros(1),
            "ngrams": np.array([3]),
            "window": np.array([10, 10]),
        },
        {
            "labels": np.array(["a"]),
            "weights": np.zeros((1, 6)),
            "bias": np.zeros(1),
            "ngrams": np.array([3]),
            "window": np.array([10, 10]),
        },
        {
            "labels": np.array(["a"]),
            "weights": np.full((1, 8), np.nan),
            "bias": np.zeros(1),
            "ngrams": np.array([3]),
            "window": np.array([10, 10]),
        },
    ],
)
def test_bad_arrays_are_refused(arrays: dict) -> None:
    with pytest.raises(ValueError):
        ClassifierModel.from_arrays(arrays)


def test_unknown_label_refused() -> None:
    with pytest.raises(ValueError, match="not in the label set"):
        train(["x"], ["other"], label_set=("code",), dim=16)


@settings(max_examples=50, deadline=None)
@given(st.text(max_size=3000))
def test_any_text_gets_a_label_with_a_probability(text: str) -> None:
    model = small_model()
    label, confidence = model.predict(text)
    assert label in model.labels and 0.0 < confidence <= 1.0
    assert model.features(text).size <= 3 * (model.head_chars + model.tail_chars + 1)
    # predict() is the plain-Python softmax (float64) of the same logits as probabilities() (float32)
    p = model.probabilities(text)
    assert label == model.labels[int(p.argmax())] and confidence == pytest.approx(float(p.max()), rel=1e-5)


@pytest.mark.parametrize(
    ("body", "text"),
    [
        (
            {
                "messages": [
                    {"role": "system", "content": "S"},
                    {"role": "user", "content": "a"},
                    {"role": "assistant", "content": "b"},
                    {"role": "user", "content": "c"},
                ]
            },
            "S\nc",
        ),
        (
            {"messages": [{"role": "user", "content": [{"type": "text", "text": "x"}, {"type": "image_url"}]}]},
            "x",
        ),
        ({"messages": ["bad"]}, ""),
        ({"prompt": "p"}, "p"),
        ({"prompt": ["first", "second"]}, "first"),
        ({"prompt": [1, 2]}, ""),
        ({}, ""),
    ],
)
def test_classification_text(body: dict, text: str) -> None:
    assert classification_text(body) == text
