"""The built-in workload classifier: hashed character n-grams and a linear softmax model, in numpy.

Cheap enough for the hot path: only a bounded head and tail of the text are read, hashing is vectorised
(a polynomial rolling hash over code points), and scoring is one gather-and-sum over the weight rows.
Pure: models are built from arrays and turned back into arrays; files are read and written elsewhere.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["DEFAULT_LABELS", "ClassifierModel", "classification_text", "confusion", "content_text", "train"]

DEFAULT_LABELS = ("code", "code-edit", "chat", "summarise", "extract", "rag-answer", "translate")
_PRIME = np.uint64(1099511628211)
_MIX = np.uint64(0x9E3779B97F4A7C15)
_SHIFT = np.uint64(29)


def content_text(content: Any) -> str:
    """The text of a message's content: a string, or the text parts of a list of parts joined by spaces."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def classification_text(body: Mapping[str, Any]) -> str:
    """What the classifier reads of a request: the system prompt and the last user turn, or the prompt."""
    messages = body.get("messages")
    if isinstance(messages, list):
        system = ""
        last_user = ""
        for msg in messages:
            if not isinstance(msg, dict):
                continue
            role = msg.get("role")
            if role in ("system", "developer") and not system:
                system = content_text(msg.get("content"))
            elif role == "user":
                last_user = content_text(msg.get("content"))
        return f"{system}\n{last_user}" if system else last_user
    prompt = body.get("prompt")
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, list) and prompt and isinstance(prompt[0], str):
        return prompt[0]
    return ""


def _bounded(text: str, head: int, tail: int) -> str:
    if len(text) <= head + tail:
        return text
    return text[:head] + "\x00" + text[-tail:]


def _hashed_ngrams(text: str, ngrams: tuple[int, ...], mask: int) -> np.ndarray:
    """Bucket ids of the character n-grams: hash(n) = hash(n-1) * P + c, one step per size."""
    codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
    h = codes
    parts = []
    for n in range(2, max(ngrams) + 1):
        m = codes.shape[0] - n + 1
        if m <= 0:
            break
        h = h[:m] * _PRIME + codes[n - 1 : n - 1 + m]
        if n in ngrams:
            parts.append(h)
    if 1 in ngrams:
        parts.append(codes)
    if not parts:
        return np.empty(0, dtype=np.intp)
    mixed = (np.concatenate(parts) * _MIX) >> _SHIFT
    return (mixed & np.uint64(mask)).astype(np.intp)


@dataclass(frozen=True)
class ClassifierModel:
    labels: tuple[str, ...]
    # (len(labels), dim) float32: one contiguous row per label, so scoring gathers along rows.
    weights: np.ndarray
    bias: np.ndarray  # (len(labels),), float32
    ngrams: tuple[int, ...] = (3, 4, 5)
    head_chars: int = 512
    tail_chars: int = 256

    @property
    def dim(self) -> int:
        return int(self.weights.shape[1])

    def features(self, text: str) -> np.ndarray:
        text = _bounded(text, self.head_chars, self.tail_chars).lower()
        return _hashed_ngrams(text, self.ngrams, self.dim - 1)

    def _logits(self, feats: np.ndarray) -> np.ndarray:
        if feats.size == 0:
            return self.bias.astype(np.float64)
        # Annotated: numpy's stubs type arithmetic on arrays of unknown dtype as Any.
        logits: np.ndarray = np.take(self.weights, feats, axis=1).sum(axis=1) / math.sqrt(feats.size) + self.bias
        return logits

    def probabilities(self, text: str) -> np.ndarray:
        z = self._logits(self.features(text))
        z = np.exp(z - z.max())
        p: np.ndarray = z / z.sum()
        return p

    def predict(self, text: str) -> tuple[str, float]:
        """The top label and its probability. Same numbers as `probabilities`, in plain Python: with a handful of
        labels, numpy's per-call overhead is most of a softmax's cost."""
        z = self._logits(self.features(text)).tolist()
        top = max(range(len(z)), key=z.__getitem__)
        peak = z[top]
        return self.labels[top], 1.0 / sum(math.exp(v - peak) for v in z)

    def to_arrays(self) -> dict[str, np.ndarray]:
        return {
            "labels": np.array(self.labels),
            "weights": self.weights.astype(np.float16),
            "bias": self.bias.astype(np.float32),
            "ngrams": np.array(self.ngrams, dtype=np.int64),
            "window": np.array([self.head_chars, self.tail_chars], dtype=np.int64),
        }

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray]) -> ClassifierModel:
        """Raises ValueError on arrays that do not make a consistent model."""
        try:
            labels = tuple(str(x) for x in arrays["labels"].tolist())
            weights = np.asarray(arrays["weights"], dtype=np.float32)
            bias = np.asarray(arrays["bias"], dtype=np.float32)
            ngrams = tuple(int(n) for n in arrays["ngrams"].tolist())
            head, tail = (int(x) for x in arrays["window"].tolist())
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not a specgate classifier model: {exc}") from None
        if weights.ndim != 2 or weights.shape[0] != len(labels) or bias.shape != (len(labels),) or not labels:
            raise ValueError("classifier arrays have inconsistent shapes")
        dim = weights.shape[1]
        if not ngrams or min(ngrams) < 1 or dim < 2 or dim & (dim - 1):
            raise ValueError("classifier n-gram sizes are invalid or its dimension is not a power of two")
        if not np.isfinite(weights).all() or not np.isfinite(bias).all():
            raise ValueError("classifier weights are not finite")
        return cls(labels, weights, bias, ngrams, head, tail)


def train(
    texts: Sequence[str],
    labels: Sequence[str],
    *,
    label_set: Sequence[str] | None = None,
    dim: int = 1 << 16,
    epochs: int = 6,
    lr: float = 0.4,
    seed: int = 0,
    ngrams: tuple[int, ...] = (3, 4, 5),
    head_chars: int = 512,
    tail_chars: int = 256,
) -> ClassifierModel:
    """Multinomial logistic regression by SGD over hashed n-gram features (deterministic for a seed)."""
    if dim < 2 or dim & (dim - 1):
        raise ValueError("dim must be a power of two")
    names = tuple(label_set or sorted(set(labels)))
    index = {name: i for i, name in enumerate(names)}
    unknown = sorted(set(labels) - set(index))
    if unknown:
        raise ValueError(f"labels not in the label set: {', '.join(unknown)}")
    shell = ClassifierModel(
        names,
        np.zeros((len(names), dim), np.float32),
        np.zeros(len(names), np.float32),
        ngrams,
        head_chars,
        tail_chars,
    )
    feats = [shell.features(t) for t in texts]
    y = np.array([index[label] for label in labels])
    w = shell.weights
    b = shell.bias
    rng = np.random.default_rng(seed)
    for epoch in range(epochs):
        step = lr / (1.0 + epoch)
        for i in rng.permutation(len(feats)):
            f = feats[i]
            if f.size == 0:
                continue
            scale = 1.0 / math.sqrt(f.size)
            z = np.take(w, f, axis=1).sum(axis=1) * scale + b
            p = np.exp(z - z.max())
            p /= p.sum()
            p[y[i]] -= 1.0
            for k in range(len(names)):
                np.add.at(w[k], f, np.float32(-step * scale * p[k]))
            b -= (step * p).astype(np.float32)
    return ClassifierModel(names, w, b, shell.ngrams, shell.head_chars, shell.tail_chars)


def confusion(model: ClassifierModel, texts: Sequence[str], labels: Sequence[str]) -> tuple[np.ndarray, float]:
    """(confusion matrix rows=true, cols=predicted in model.labels order, accuracy)."""
    index = {name: i for i, name in enumerate(model.labels)}
    matrix = np.zeros((len(model.labels), len(model.labels)), dtype=np.int64)
    for text, label in zip(texts, labels, strict=True):
        predicted, _ = model.predict(text)
        matrix[index[label], index[predicted]] += 1
    total = matrix.sum()
    return matrix, float(np.trace(matrix) / total) if total else 0.0
