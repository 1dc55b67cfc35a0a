"""The classifier's C pass (controllers/_ngram_scores.c) against its numpy and regular-expression forms.

The C pass must give the numbers the numpy path gives (the features are the same; only float summation order
differs), so a gateway with or without a C compiler routes alike. CI builds it, so there it must be present.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from specgate.controllers import classifier as c
from specgate.controllers.classifier import ClassifierModel, classification_text
from specgate.runtime.classifier_files import BUNDLED_MODEL, HELD_OUT_DATA, load_model

native = c._native
needs_native = pytest.mark.skipif(native is None and not os.environ.get("CI"), reason="C module not built here")


def test_ci_builds_the_c_pass() -> None:
    # An install without a compiler still works (numpy path); CI has one, and the latency figures assume it.
    if os.environ.get("CI"):
        assert native is not None, "specgate.controllers._ngram_scores was not built"
        assert load_model(BUNDLED_MODEL).native


def _numpy_logits(model: ClassifierModel, text: str) -> np.ndarray:
    return model._logits(model.features(text)).astype(np.float64)


def _assert_same(model: ClassifierModel, text: str) -> None:
    top, probability, logits = model._native_predict(text)
    expected = _numpy_logits(model, text)
    assert np.allclose(logits, expected, rtol=0, atol=1e-4), text[:80]
    z = np.exp(expected - expected.max())
    assert probability == pytest.approx(float(z.max() / z.sum()), abs=1e-4)
    if np.sort(expected)[-1] - np.sort(expected)[-2] > 1e-3:  # not a near-tie: the same label
        assert top == int(expected.argmax())


@needs_native
def test_the_c_pass_scores_every_labelled_prompt_as_numpy_does() -> None:
    model = load_model(BUNDLED_MODEL)
    assert model.native
    for name in ("test.jsonl", "dev.jsonl", "realistic.jsonl"):
        for line in (HELD_OUT_DATA.parent / name).read_text().splitlines():
            _assert_same(model, classification_text(json.loads(line)))


@needs_native
@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from([*"ab \n\r\t;{}\x1e\u2028İ", "def ", "fix ", "error", "总结", "修复", "in 3 lines", "json"]),
        max_size=400,
    ).map("".join)
    | st.text(max_size=1500)
)
def test_the_c_pass_scores_any_text_as_numpy_does(text: str) -> None:
    _assert_same(load_model(BUNDLED_MODEL), text)


@needs_native
@settings(max_examples=500, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [*" \t\n;{}x_é1\xa0\u3000\x1f", "def", "class", "format", "if(", "fn ", "return", "vars", "  ", "\t"]
        ),
        max_size=60,
    ).map("".join)
)
def test_code_lines_in_c_count_what_the_regular_expression_counts(text: str) -> None:
    assert native.code_lines(text) == len(c._CODE_LINE_STARTS.findall("\n" + text))


@needs_native
@given(st.text(max_size=300))
def test_script_bins_in_c_match_numpy(text: str) -> None:
    codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    expected = np.bincount(np.searchsorted(c._SCRIPT_EDGES, codes, "right"), minlength=len(c._SCRIPT_EDGES) + 1)
    assert native.bin_counts(text, c._SCRIPT_EDGES) == expected.tolist()


@needs_native
def test_bad_tables_are_refused_not_read_out_of_bounds() -> None:
    model = load_model(BUNDLED_MODEL)
    rows, marks, keys = model._rows, model._marks, model._key_hashes
    ok = ("abc", "", 2, (3, 4, 5))
    with pytest.raises(ValueError, match="rows must be"):
        native.ngram_scores(*ok, rows[:100], 7, marks, keys)  # fewer rows than buckets
    with pytest.raises(ValueError, match="labels"):
        native.ngram_scores(*ok, rows, 0, marks, keys)
    with pytest.raises(ValueError, match="rows must be"):
        native.ngram_scores(*ok, rows, 9, marks, keys)  # more labels than the row holds
    with pytest.raises(ValueError, match="sizes"):
        native.ngram_scores("abc", "", 2, (0,), rows, 7, marks, keys)
    with pytest.raises(ValueError, match="keys"):
        native.ngram_scores(*ok, rows, 7, marks, np.zeros(3, np.uint8))
    with pytest.raises(TypeError):
        native.ngram_scores(b"abc", "", 2, (3,), rows, 7, marks, keys)
    with pytest.raises(ValueError, match="one value per label"):
        native.finish([0.0] * 6, 1, [1], 4, rows, 7, marks, model._bias32)
    with pytest.raises(ValueError, match="edges"):
        native.bin_counts("abc", np.zeros(0, np.uint32))


def test_without_the_c_module_the_numpy_path_gives_the_same_labels(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = (HELD_OUT_DATA.parent / "realistic.jsonl").read_text().splitlines()
    texts = [classification_text(json.loads(line)) for line in rows]
    texts += ["Fix this:\n    def f(x):\n        return x +\nTypeError: unsupported", "这段代码为什么报错\uff1f"]
    fast = load_model(BUNDLED_MODEL)
    expected = [fast.predict(text) for text in texts]
    monkeypatch.setattr(c, "_native", None)  # n-grams, code lines and scripts all in numpy / re
    plain = ClassifierModel.from_arrays(fast.to_arrays())
    assert not plain.native
    for text, (label, probability) in zip(texts, expected, strict=True):
        assert plain.predict(text) == (label, pytest.approx(probability, abs=1e-4))
