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


def test_averaged_seeds_score_the_mean_of_the_seeds_logits() -> None:
    """Training from several seeds averages their weights; the logits are linear in the weights, so the averaged
    model's logits are the mean of the single-seed models' (what makes it an ensemble at one model's cost)."""
    settings = {"label_set": ("code", "chat"), "dim": 1 << 12, "epochs": 3}
    runs = [train(TEXTS, LABELS, seed=s, **settings) for s in (5, 6, 7)]
    averaged = train(TEXTS, LABELS, seed=5, average_seeds=3, **settings)
    assert not np.array_equal(runs[0].weights, runs[1].weights)  # the seeds differ, so the test can fail
    for text in ["def g(y): return y", "tell me about your day", "print(1) how are you"]:
        mean = np.mean([m._logits(m.features(text)) for m in runs], axis=0)
        assert np.allclose(averaged._logits(averaged.features(text)), mean, atol=1e-5)
    with pytest.raises(ValueError, match="average_seeds"):
        train(TEXTS, LABELS, average_seeds=0, **settings)


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
    # n-grams of the bounded user turn, its ask and the system prompt; 14 shape cues, 6 task words twice, repeated
    windows = model.head_chars + model.tail_chars + 1 + model.ask_chars + model.system_chars
    assert model.features(text).size <= 3 * windows + 26 * model.cue_repeat
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


def reference_features(model: ClassifierModel, text: str) -> np.ndarray:
    """The features in their plainest form (three n-gram passes, a loop over lines, every pattern searched in
    full): the fast path in `ClassifierModel.features` must give the same bucket ids, in any order."""
    import re
    import zlib

    from specgate.controllers import classifier as c

    mask = model.dim - 1
    system, _, user = text.rpartition(c.SYSTEM_SEPARATOR)
    user = c._bounded(user, model.head_chars, model.tail_chars)
    lowered = user.lower()
    parts = [
        c._hashed_ngrams(lowered, model.ngrams, mask),
        c._hashed_ngrams(lowered[: model.ask_chars], model.ngrams, mask, c._ASK_SALT),
    ]
    patterns = [(name, re.compile(p)) for name, p in c._TASK_WORDS.items()]

    def words(low: str, ask_chars: int) -> list[str]:
        found = []
        for name, pattern in patterns:
            if pattern.search(low[:ask_chars]):
                found.append(f"word:{name}:ask")
            elif pattern.search(low[ask_chars:]):
                found.append(f"word:{name}:body")
        return found

    lines = user.splitlines() or [""]
    code_lines = sum(1 for line in lines if c._CODE_LINE.match(line))
    fast_cues = c.shape_cues(user, system, model.ask_chars)
    expected_cues = [
        f"len:{c._bucket(len(user))}",
        f"lines:{c._bucket(len(lines))}",
        f"code:{min(int(code_lines / len(lines) * 4), 3)}",
        f"code-lines:{c._bucket(code_lines)}",
        f"fence:{'```' in user}",
        f"trace:{re.search(c._TRACEBACK_WORDS['trace'], lowered) is not None}",
    ]
    scripts = (
        ("kana", "[\u3040-\u30ff]"),
        ("cjk", "[\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]"),
        ("cyrillic", "[\u0400-\u052f]"),
        ("latin", "[A-Za-z\u00c0-\u024f]"),
    )

    def script(part: str) -> str:
        counts = {name: len(re.findall(pattern, part)) for name, pattern in scripts}
        if counts["kana"]:
            return "kana"
        best = max(counts, key=lambda name: (counts[name], -list(counts).index(name)))  # ties: the earlier
        return best if counts[best] else "none"

    ask_chars = model.ask_chars
    expected_cues += [
        f"ask-script:{script(user[:ask_chars])}",
        f"body-script:{script(user[ask_chars : ask_chars * 4])}",
    ]
    assert fast_cues[:8] == expected_cues
    cues = fast_cues + words(lowered, model.ask_chars)
    if system:
        low_system = system[: model.system_chars].lower()
        parts.append(c._hashed_ngrams(low_system, model.ngrams, mask, c._SYSTEM_SALT))
        cues += [f"{w}:system" for w in words(low_system, model.system_chars)]
    ids = np.array([zlib.crc32(cue.encode()) & mask for cue in cues], dtype=np.intp)
    parts.append(np.repeat(ids, model.cue_repeat))
    return np.concatenate(parts)


def bundled_model() -> ClassifierModel:
    from specgate.runtime.classifier_files import BUNDLED_MODEL, load_model

    return load_model(BUNDLED_MODEL)


_CASES = [
    "",
    "a",
    "ab\x1e",
    "\x1ex",
    "sys\x1eq",
    "You are a translator.\x1eTranslate into German: good morning",
    "Fix this:\n    def f(x):\n        return x +\n\n\nTypeError: unsupported operand",
    "line\r\nwith\rodd\u2028breaks;\n  indented\x0cform feed {",
    "\n\n  \n\t\n",
    "İstanbul ﬁx the bug " * 80,
    "这段代码为什么报错\uff1f请修复。\n" + "x = 1;\n" * 300,
    "summarize the passage in three bullets\n" + "lorem ipsum " * 200 + "\nlist all invoice fields as json",
]


@pytest.mark.parametrize("text", _CASES)
def test_fast_features_equal_the_plain_ones(text: str) -> None:
    model = bundled_model()
    assert sorted(model.features(text).tolist()) == sorted(reference_features(model, text).tolist())


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from([*"ab \n\r\t;{}\x1e\u2028İ", "def ", "fix ", "error", "总结", "in 3 lines"]), max_size=400
    ).map("".join)
    | st.text(max_size=1500)
)
def test_fast_features_equal_the_plain_ones_on_any_text(text: str) -> None:
    model = bundled_model()
    assert sorted(model.features(text).tolist()) == sorted(reference_features(model, text).tolist())


def test_fast_features_equal_the_plain_ones_on_every_labelled_prompt() -> None:
    import json

    from specgate.runtime.classifier_files import HELD_OUT_DATA

    model = bundled_model()
    for name in ("test.jsonl", "dev.jsonl", "realistic.jsonl"):
        for line in (HELD_OUT_DATA.parent / name).read_text().splitlines():
            text = classification_text(json.loads(line))
            assert sorted(model.features(text).tolist()) == sorted(reference_features(model, text).tolist()), name


def test_task_word_scans_use_literals_every_match_contains() -> None:
    from specgate.controllers.classifier import _TASK_PATTERNS, _TRACEBACK

    assert {"write", "build", "implement", "書いて"} <= _TASK_PATTERNS.anchors("write-code")
    assert "implementa" not in _TASK_PATTERNS.anchors("write-code")  # "implement" is a prefix: it vouches for it
    assert {"bullets", "sentences", "lines", "tl"} <= _TASK_PATTERNS.anchors("summary")  # "in three bullets", "tl;dr"
    assert "error" in _TRACEBACK.anchors("trace")
    assert _TASK_PATTERNS.matching("in a few words") == [] and _TASK_PATTERNS.matching("in 3 bullets") == ["summary"]
    assert _TASK_PATTERNS.candidates("hello there") == set()
