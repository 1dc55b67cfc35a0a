"""The bundled classifier model and the committed labelled data."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from specgate.backends.pool import PoolSet
from specgate.controllers.classifier import DEFAULT_LABELS, confusion
from specgate.gateway.cli import main
from specgate.runtime.classifier_files import (
    BUNDLED_MODEL,
    HELD_OUT_DATA,
    ClassifierLoadError,
    load_labelled,
    load_model,
)
from specgate.runtime.classify import RequestClassifier
from specgate.runtime.dispatch import Dispatcher
from specgate.runtime.metrics import GatewayMetrics
from specgate.runtime.requests import parse_body

from specgate.config import ClassifierConfig, validate_config


def test_bundled_model_accuracy_on_held_out_set() -> None:
    model = load_model(BUNDLED_MODEL)
    assert model.labels == DEFAULT_LABELS
    texts, labels = load_labelled(HELD_OUT_DATA)
    _, accuracy = confusion(model, texts, labels)
    assert len(texts) >= 2000
    assert accuracy >= 0.90  # 0.925 measured (docs/classifier.md)


def test_bundled_model_accuracy_on_the_realistic_set() -> None:
    """data/classifier/realistic.jsonl: 92 hand-written prompts in seven languages, written apart from the training
    data generator and never trained or tuned on. The goal is 0.95 (88 of 92); the bundled model scores 0.957 there
    (88; docs/classifier.md). Predictions are deterministic, so the goal itself is the floor."""
    model = load_model(BUNDLED_MODEL)
    texts, labels = load_labelled(HELD_OUT_DATA.parent / "realistic.jsonl")
    _, accuracy = confusion(model, texts, labels)
    assert len(texts) >= 90 and len(set(labels)) == 7
    assert accuracy >= 0.95


def test_bundled_model_accuracy_on_the_development_set() -> None:
    """data/classifier/dev.jsonl: 140 hand-written prompts, the set features, generator wording and settings were
    chosen on (0.929)."""
    model = load_model(BUNDLED_MODEL)
    texts, labels = load_labelled(HELD_OUT_DATA.parent / "dev.jsonl")
    _, accuracy = confusion(model, texts, labels)
    assert len(texts) == 140 and len(set(labels)) == 7
    assert accuracy >= 0.88


def test_train_and_test_share_no_text() -> None:
    train_texts, _ = load_labelled(HELD_OUT_DATA.parent / "train.jsonl")
    test_texts, _ = load_labelled(HELD_OUT_DATA)
    long_train = {t for t in train_texts if len(t) > 200}
    assert not long_train & {t for t in test_texts if len(t) > 200}


def test_eval_command_prints_table_and_accuracy(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["classifier", "eval"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("accuracy: "))
    assert float(line.split()[1]) >= 0.88
    assert "rag-answer" in out


def test_train_command_writes_a_usable_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "d.jsonl"
    rows = [{"label": "code", "prompt": f"def f{i}(x): return x + {i}"} for i in range(20)]
    rows += [
        {"label": "chat", "messages": [{"role": "user", "content": f"hello friend number {i}"}]} for i in range(20)
    ]
    data.write_bytes(b"\n".join(orjson.dumps(r) for r in rows))
    out = tmp_path / "m.npz"
    assert main(["classifier", "train", "--data", str(data), "--out", str(out), "--dim-bits", "12"]) == 0
    assert main(["classifier", "eval", "--data", str(data), "--model", str(out)]) == 0
    assert "accuracy: 1.0000" in capsys.readouterr().out
    assert main(["classifier", "train", "--data", str(data), "--out", str(out), "--cue-repeat", "0"]) == 2
    assert "cue_repeat >= 1" in capsys.readouterr().err
    smaller = ["--ngrams", "4,5", "--head-chars", "64", "--tail-chars", "32", "--dim-bits", "10"]
    assert main(["classifier", "train", "--data", str(data), "--out", str(out), *smaller]) == 0
    model = load_model(out)
    assert (model.ngrams, model.head_chars, model.tail_chars, model.dim) == ((4, 5), 64, 32, 1 << 10)
    capsys.readouterr()
    with pytest.raises(SystemExit):
        main(["classifier", "train", "--data", str(data), "--out", str(out), "--ngrams", "0,x"])
    assert "n-gram sizes" in capsys.readouterr().err


def test_broken_model_file_fails_open(tmp_path: Path) -> None:
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip")
    with pytest.raises(ClassifierLoadError):
        load_model(bad)
    metrics = GatewayMetrics()
    classifier = RequestClassifier(ClassifierConfig(model_path=str(bad)), metrics)
    assert classifier.model is None and classifier.load_error
    assert classifier({"prompt": "def f(x):"}) is None
    assert metrics.classifier_errors.labels("load")._value.get() == 1

    config = validate_config(
        {
            "pools": [{"name": "p", "model": "m", "endpoints": ["http://127.0.0.1:9"]}],
            "routing": {
                "routes": [{"name": "code", "match": [{"classes": ["code"]}]}],
                "default_route": "chat",
            },
        }
    )
    dispatcher = Dispatcher(config, PoolSet(config), classifier)
    req = parse_body(orjson.dumps({"model": "m", "prompt": "def f(x):\n    return x"}), "completions")
    assert dispatcher.choose_route(req, {}) == "chat"


def test_classifier_routes_code_and_falls_back_when_unsure() -> None:
    config = validate_config(
        {
            "pools": [{"name": "p", "model": "m", "endpoints": ["http://127.0.0.1:9"]}],
            "routing": {
                "routes": [
                    {"name": "code", "match": [{"classes": ["code", "code-edit"]}]},
                    {"name": "sum", "match": [{"classes": ["summarise"]}]},
                ],
                "default_route": "chat",
            },
        }
    )
    metrics = GatewayMetrics()
    dispatcher = Dispatcher(config, PoolSet(config), RequestClassifier(config.classifier, metrics))
    code = parse_body(
        orjson.dumps(
            {
                "model": "m",
                "messages": [
                    {
                        "role": "user",
                        "content": "Refactor this:\n```python\ndef add(a, b):\n    return a+b\n```",
                    }
                ],
            }
        ),
        "chat",
    )
    chat = parse_body(
        orjson.dumps({"model": "m", "messages": [{"role": "user", "content": "Hi! Tell me a joke about penguins."}]}),
        "chat",
    )
    assert dispatcher.choose_route(code, {}) == "code"
    assert dispatcher.choose_route(chat, {}) == "chat"
    counted = sum(metrics.classifications.labels(x)._value.get() for x in ("code", "code-edit", "chat"))
    assert counted == 2

    strict = Dispatcher(
        validate_config({**config.model_dump(), "classifier": {"min_confidence": 1.0}}),
        PoolSet(config),
        RequestClassifier(ClassifierConfig(min_confidence=1.0), metrics),
    )
    assert strict.choose_route(code, {}) == "chat"


def test_route_header_needs_permission() -> None:
    base = {
        "pools": [{"name": "p", "model": "m", "endpoints": ["http://127.0.0.1:9"]}],
        "routing": {"routes": [{"name": "code"}], "default_route": "chat"},
    }
    req = parse_body(orjson.dumps({"model": "m", "prompt": "x"}), "completions")
    closed = validate_config(base)
    assert Dispatcher(closed, PoolSet(closed)).choose_route(req, {"x-specgate-route": "code"}) == "chat"
    base["routing"]["allow_route_header"] = True
    opened = validate_config(base)
    d = Dispatcher(opened, PoolSet(opened))
    assert d.choose_route(req, {"x-specgate-route": "code"}) == "code"
    from specgate.errors import InvalidRequest

    with pytest.raises(InvalidRequest):
        d.choose_route(req, {"x-specgate-route": "nope"})


def _config_with_code_route(tmp_path: Path, classifier: dict[str, object]) -> Path:
    path = tmp_path / "cfg.yaml"
    path.write_text(
        orjson.dumps(
            {
                "pools": [{"name": "p", "model": "m", "endpoints": ["http://127.0.0.1:9"]}],
                "routing": {"routes": [{"name": "code", "match": [{"classes": ["code"]}]}]},
                "classifier": classifier,
            }
        ).decode()
    )
    return path


def test_routes_on_labels_need_a_loadable_model_at_start_up(tmp_path: Path) -> None:
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip")
    with pytest.raises(ClassifierLoadError, match=r"route rules use classifier labels \(code\)"):
        RequestClassifier(ClassifierConfig(model_path=str(bad)), GatewayMetrics(), frozenset({"code"}))
    with pytest.raises(ClassifierLoadError, match="does not have: nonsense"):
        RequestClassifier(ClassifierConfig(), GatewayMetrics(), frozenset({"code", "nonsense"}))
    ok = RequestClassifier(ClassifierConfig(), GatewayMetrics(), frozenset({"code"}))
    assert ok.model is not None and ok({"prompt": "def fib(n):"}) == "code"


def test_check_config_reports_a_classifier_the_routes_cannot_use(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip")
    assert main(["check-config", str(_config_with_code_route(tmp_path, {"model_path": str(bad)}))]) == 1
    assert "route rules use classifier labels (code)" in capsys.readouterr().out
    assert main(["check-config", str(_config_with_code_route(tmp_path, {"enabled": False}))]) == 1
    assert "classifier.enabled is false but route rules use `classes`" in capsys.readouterr().out
    assert main(["check-config", str(_config_with_code_route(tmp_path, {}))]) == 0


def test_serve_refuses_to_start_without_the_model_its_routes_need(tmp_path: Path) -> None:
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip")
    with pytest.raises(SystemExit) as exit_info:
        main(["serve", "--config", str(_config_with_code_route(tmp_path, {"model_path": str(bad)})), "--port", "1"])
    assert exit_info.value.code == 2


@pytest.mark.skipif(sys.version_info[:3] != (3, 11, 7), reason="made from 3.11.7's standard library")
def test_the_generator_makes_the_committed_sets_byte_for_byte(tmp_path: Path) -> None:
    """docs/classifier.md says how the train and test sets were made; this keeps the command true."""
    tool = Path(__file__).resolve().parents[2] / "tools" / "make_classifier_data.py"
    args = ["--out", str(tmp_path), "--per-label", "2500", "--test-per-label", "300"]
    done = subprocess.run([sys.executable, str(tool), *args], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    for name in ("train.jsonl", "test.jsonl"):
        assert (tmp_path / name).read_bytes() == (HELD_OUT_DATA.parent / name).read_bytes(), name
