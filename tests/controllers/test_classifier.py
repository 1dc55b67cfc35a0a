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
            "S\x1ec",
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


def test_shape_cues_see_code_tracebacks_scripts_and_questions() -> None:
    from specgate.controllers.classifier import shape_cues

    trace = 'Why?\nTraceback (most recent call last):\n  File "a.py", line 1\nTypeError: bad operand'
    cues = set(shape_cues(trace, "", 160))
    assert {"trace:True", "ask-script:latin", "system:False"} <= cues
    assert "trace:False" in shape_cues("the error of my ways", "", 160)  # a word, not an exception name
    assert "trace:True" in shape_cues("it says ValueError when I run it", "", 160)
    assert {"ask-script:cjk", "question:True"} <= set(shape_cues("这段代码为什么报错\uff1f", "", 160))
    assert "ask-script:kana" in shape_cues("このコードを直して", "", 160)
    assert "ask-script:cyrillic" in shape_cues("Переведи на английский", "", 160)
    code = "def f(x):\n    return x + 1\n\nclass A:\n    pass"
    assert "code:3" in shape_cues(code, "", 160) and "code:0" in shape_cues("hello there\nhow are you", "sys", 160)
    assert "system:True" in shape_cues("hi", "You are a translator.", 160)


def test_task_words_are_placed_in_the_ask_or_the_body() -> None:
    from specgate.controllers.classifier import _task_words

    assert _task_words("please summarize this:\nlong text", 40) == ["word:summary:ask"]
    assert _task_words("x" * 50 + " translate that", 40) == ["word:translate:body"]
    assert "word:edit:ask" in _task_words("исправь ошибку в коде", 160)
    assert _task_words("hello there", 160) == []


def test_a_system_prompt_is_read_apart_from_the_user_turn() -> None:
    from specgate.controllers.classifier import SYSTEM_SEPARATOR

    model = train(["a"] * 2, ["code", "chat"], dim=1 << 12, epochs=1)
    alone = model.features("Translate to German: good morning")
    with_system = model.features(f"You are a translator.{SYSTEM_SEPARATOR}Translate to German: good morning")
    assert len(set(with_system) - set(alone)) > 30  # the system prompt's n-grams, in a space of their own
    assert len(set(alone) - set(with_system)) <= 2  # the user turn's stay; only the "no system prompt" cue goes


def test_models_without_the_parts_array_read_the_text_as_one() -> None:
    model = small_model()
    arrays = {k: v for k, v in model.to_arrays().items() if k != "parts"}
    old = ClassifierModel.from_arrays(arrays)
    assert (old.ask_chars, old.cue_repeat) == (0, 1)
    joined = old.features("sys\x1euser text")
    assert np.array_equal(joined, old.features("sys\nuser text"))


@pytest.mark.parametrize("kwargs", [{"ask_chars": -1}, {"system_chars": -5}, {"cue_repeat": 0}])
def test_bad_feature_settings_are_refused(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        train(TEXTS, LABELS, dim=1 << 8, epochs=1, **kwargs)
