"""The built-in workload classifier: hashed character n-grams and a linear softmax model, in numpy.

Cheap enough for the hot path: only a bounded head and tail of the text are read, hashing is vectorised
(a polynomial rolling hash over code points), and scoring is one gather-and-sum over contiguous weight rows.
The system prompt's n-grams are hashed apart from the user turn's (a generic system prompt says little about the
task), the opening of the user turn (where the ask usually is) is hashed apart once more, and a few shape cues
(code lines, a traceback, the script the ask is written in, the length) are features too.
Pure: models are built from arrays and turned back into arrays; files are read and written elsewhere.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import math
import re
import zlib
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from specgate.controllers.pattern_prefilter import GramIndex, PatternSet, Spots

_native: Any = None
try:  # the n-gram pass in C (controllers/_ngram_scores.c), built where a compiler was there; else the numpy path
    _native = importlib.import_module("specgate.controllers._ngram_scores")
except ImportError:  # pragma: no cover - an install without a C compiler
    _native = None

__all__ = [
    "DEFAULT_LABELS",
    "SYSTEM_SEPARATOR",
    "ClassifierModel",
    "classification_text",
    "confusion",
    "content_text",
    "shape_cues",
    "train",
]

DEFAULT_LABELS = ("code", "code-edit", "chat", "summarise", "extract", "rag-answer", "translate")
_PRIME = np.uint64(1099511628211)
_MIX = np.uint64(0x9E3779B97F4A7C15)
_SHIFT = np.uint64(29)
# The system prompt and the user turn are joined with this separator (a control character no client sends), so the
# features can tell them apart.
SYSTEM_SEPARATOR = "\x1e"
_SYSTEM_SALT = np.uint64(0x5BD1E995)
_ASK_SALT = np.uint64(0x27D4EB2F)


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
        return f"{system}{SYSTEM_SEPARATOR}{last_user}" if system else last_user
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


def _hashed_ngrams(text: str, ngrams: tuple[int, ...], mask: int, salt: np.uint64 | None = None) -> np.ndarray:
    """Bucket ids of the character n-grams: hash(n) = hash(n-1) * P + c, one step per size; `salt` puts them in a
    hash space of their own."""
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
    hashed = np.concatenate(parts)
    if salt is not None:
        hashed ^= salt
    mixed = (hashed * _MIX) >> _SHIFT
    return (mixed & np.uint64(mask)).astype(np.intp)


_CODE_LINE = re.compile(
    r"^(?:[ \t]+\S|.*[;{}]\s*$|\s*(?:def|class|import|from|return|if|for|while|func|fn|let|const|var)\b)"
)
# The same test after every newline, in one scan of "\n" + text (a Python loop over lines was a fifth of the cues'
# time; a leading literal lets `re` jump from newline to newline): zero-width after the newline, so no match runs into
# the next line, and `\s` narrowed to not cross a newline. Exact where "\n" is the only line break; text with another
# one (str.splitlines also splits at "\r", "\x1c", "\u2028", ...) takes the per-line path.
_CODE_LINE_STARTS = re.compile(
    r"\n(?=[ \t]+\S|.*[;{}][^\S\n]*(?:\n|\Z)|"
    r"[^\S\n]*(?:def|class|import|from|return|if|for|while|func|fn|let|const|var)\b)"
)
_OTHER_LINE_BREAKS = re.compile("[\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


def _code_lines(text: str) -> tuple[int, int]:
    """(lines, lines that look like code), lines as str.splitlines counts them (an empty text is one line)."""
    if _OTHER_LINE_BREAKS.search(text) is None:
        lines = text.count("\n") + (not text.endswith("\n"))
        if _native is not None:  # the same test in C (tests/controllers/test_classifier_native.py)
            return max(lines, 1), _native.code_lines(text)
        return max(lines, 1), len(_CODE_LINE_STARTS.findall("\n" + text))
    split = text.splitlines() or [""]
    return len(split), sum(1 for line in split if _CODE_LINE.match(line))


# Searched in lowered text (tracebacks say "Traceback" and "TypeError"). `(?<=\w)error` and not `\w+error`: the same
# matches, without trying a run of word characters at every position; no `\b` before `exception` (so a scan can skip
# to the candidates' first letters): these cues took a fifth of the features' time.


_QUESTION_MARKS = ("?", "\uff1f")  # the full-width one ends Chinese and Japanese questions


# Code point ranges of the scripts: (start, end) pairs, end excluded. Kana apart: Japanese mixes kanji with kana, and
# kana alone tells it from Chinese.
_SCRIPT_RANGES = {
    "kana": ((0x3040, 0x3100),),
    "cjk": ((0x3400, 0x4DC0), (0x4E00, 0xA000), (0xAC00, 0xD7B0)),
    "cyrillic": ((0x0400, 0x0530),),
    "latin": ((0x41, 0x5B), (0x61, 0x7B), (0xC0, 0x250)),
}
_SCRIPT_EDGES = np.array(sorted(x for ranges in _SCRIPT_RANGES.values() for pair in ranges for x in pair), np.uint32)
# searchsorted(edges, c, "right") puts a code point of a range that starts at edge i in bin i + 1.
_SCRIPT_BINS = {
    name: [_SCRIPT_EDGES.tolist().index(start) + 1 for start, _ in ranges] for name, ranges in _SCRIPT_RANGES.items()
}
_ASCII_LETTER = re.compile(r"[A-Za-z]")


def _script(text: str) -> str:
    """The writing system of most letters in `text` (kana wins outright; ties go to cjk, then cyrillic, then latin):
    kana, cjk, cyrillic, latin or none."""
    if text.isascii():  # most prompts: no need to count the other scripts' letters
        return "latin" if _ASCII_LETTER.search(text) else "none"
    if _native is not None:
        bins = _native.bin_counts(text, _SCRIPT_EDGES)
    else:  # an install without the C module
        codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
        bins = np.bincount(np.searchsorted(_SCRIPT_EDGES, codes, "right"), minlength=len(_SCRIPT_EDGES) + 1).tolist()
    best, most = "none", 0
    for name, where in _SCRIPT_BINS.items():
        n = sum(bins[i] for i in where)
        if name == "kana" and n:
            return name
        if n > most:
            best, most = name, n
    return best


_TRACEBACK_WORDS = {
    "trace": r"traceback \(most recent call last\)|(?<=\w)error\b|exception\b|panicked at|segmentation fault"
}
_TRACEBACK = PatternSet(_TRACEBACK_WORDS)


# Word stems that name a task, in the languages the training data covers: features, not rules (the model weighs
# them; a stem in pasted material says less than one in the ask, so where it occurs is part of the feature).
_TASK_WORDS = {
    "write-code": r"\b(?:write|implement|create|generate|build)\b.{0,40}\b(?:function|script|class|program|query|"
    r"endpoint|regex|method|module|cli|code)|schreib|écri[st]|escrib|escrev|напиши|напишите|реализ|编写|写一个|実装|"
    r"書いて|scrivi|implementa",
    "edit": r"\b(?:fix|bug|broken|crash|refactor|rewrite|optimi[sz]e|clean up|review|doesn't work|does not work|fails?|"
    r"error|traceback|exception|add (?:type hints|tests|docstrings|comments))\b|korrigier|fehler|behebe|corrige|"
    r"erreur|arregla|corrija|исправ|ошибк|修复|报错|错误|修正|バグ|エラー|correggi|errore",
    "summary": r"summar|tl;?dr|key points|main points|in (?:a few|three|two|\d) (?:bullets|sentences|lines)|gist|recap|"
    r"zusammenfass|résum|resum|краткое|кратко|суммир|总结|概括|摘要|要約|まとめ|riassum|sintetizz|sum (?:it |this )?up|"
    r"boil (?:it|this) down|nutshell|essentials|fass(?=\w* .{0,60}?zusammen)|puntos principales|pontos principais|"
    r"punti principali|главное|要点",
    "extract": r"extract|json|fields?\b|invoice|parse|\blist (?:all|every)|entities|schema|table of|"
    r"extrahier|rechnung|extrai|factura|fatura|fattura|извлеч|счёт|счет|提取|发票|抽出|抜き出|取り出|請求書|estrai",
    "context": r"context|passage|document|source[s:]|search results|retrieved|according to|based on the|"
    r"kontext|dokument|contexte|contexto|документ|контекст|上下文|根据|文書|コンテキスト|に基づ|contesto|excerpt|"
    r"extrait|trecho|fragment|estratt|auszüg|выдерж|фрагмент|资料|資料|抜粋",
    "translate": r"translat|in(?:to)? (?:english|german|french|spanish|chinese|japanese|portuguese|russian|italian)\b|"
    r"übersetz|tradu|перевед|переве|翻译|译成|翻訳|訳して|tradur|traduz",
}
_TASK_PATTERNS = PatternSet(_TASK_WORDS)


def _task_words(
    lowered: str,
    ask_chars: int,
    in_ask: Collection[str] | Spots | None = None,
    in_rest: Collection[str] | Spots | None = None,
) -> list[str]:
    """The task words found in the first `ask_chars` characters, and those found only after them. `in_ask` /
    `in_rest`: the patterns that may match there, where the caller knows (a superset; see GramIndex)."""
    ask, rest = lowered[:ask_chars], lowered[ask_chars:]
    found_ask = _TASK_PATTERNS.matching(ask, in_ask)
    found_rest = _TASK_PATTERNS.matching(rest, in_rest, skip=found_ask) if rest else []
    return [f"word:{name}:ask" for name in found_ask] + [f"word:{name}:body" for name in found_rest]


def _has_trace(lowered: str, spots: Spots | None) -> bool:
    return bool(_TRACEBACK.matching(lowered, spots))


def _bucket(n: int) -> int:
    return n.bit_length()


# The shape cues' names, in the order of the facts `_shape_facts` returns (the last fact, "mostly code", is combined
# with three of them instead).
_SHAPE_NAMES = (
    "len",
    "lines",
    "code",
    "code-lines",
    "fence",
    "trace",
    "ask-script",
    "body-script",
    "system",
    "ask-lines",
    "question",
)
_ShapeFacts = tuple[int, int, int, int, bool, bool, str, str, bool, int, bool, bool]


def _shape_facts(user: str, system: str, ask_chars: int, lowered: str, trace_spots: Spots | None) -> _ShapeFacts:
    lines, code_lines = _code_lines(user)
    share = code_lines / lines
    ask = user[:ask_chars]
    return (
        _bucket(len(user)),
        _bucket(lines),
        min(int(share * 4), 3),
        _bucket(code_lines),
        "```" in user,
        _has_trace(lowered, trace_spots),
        _script(ask),
        _script(user[ask_chars : ask_chars * 4]),
        bool(system),
        ask.count("\n"),
        user.rstrip().endswith(_QUESTION_MARKS),
        share > 0.3,
    )


def _shape_strings(facts: _ShapeFacts) -> list[str]:
    cues = [f"{name}:{value}" for name, value in zip(_SHAPE_NAMES, facts, strict=False)]
    cues += [f"{c}&code:{facts[-1]}" for c in cues[5:8]]
    return cues


def shape_cues(
    user: str, system: str, ask_chars: int, lowered: str | None = None, trace_spots: Spots | None = None
) -> list[str]:
    """Coarse facts about a request's shape that n-grams miss: how much of it is code, a traceback, the script of
    the ask and of the rest, its length, whether a system prompt came with it. `lowered`: `user.lower()`, where the
    caller has it already; `trace_spots`: where a traceback pattern may match in `lowered`, where the caller knows
    (None: scan for its literals here)."""
    lowered = user.lower() if lowered is None else lowered
    return _shape_strings(_shape_facts(user, system, ask_chars, lowered, trace_spots))


def _hits(
    ids: np.ndarray, blocks: list[tuple[int, int, int]], marks: np.ndarray
) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """(n, start) of the user turn's and of the system prompt's n-grams that fall in a marked bucket, from the ids and
    their runs (n, start, end) as `_ngram_ids` lays them out (the system prompt's with n < 0)."""
    user: list[tuple[int, int]] = []
    system: list[tuple[int, int]] = []
    hits = np.flatnonzero(marks[ids]).tolist()
    if not hits:
        return user, system
    block = iter(blocks)
    n, start, end = next(block, (0, 0, 0))
    for i in hits:
        while i >= end:
            n, start, end = next(block, (0, len(ids), len(ids) + 1))
        if i < start or not n:  # the ask's own (salted) run, or past the last block
            continue
        if n > 0:
            user.append((n, i - start))
        else:
            system.append((-n, i - start))
    return user, system


def _rolling_hash(text: str) -> int:
    """The n-gram hash before salt and mixing, as `_hashed_ngrams` computes it (64-bit wrap-around)."""
    h = 0
    for i, c in enumerate(text):
        h = ord(c) if i == 0 else (h * int(_PRIME) + ord(c)) & 0xFFFFFFFFFFFFFFFF
    return h


def _cue_strings(key: _CueKey) -> list[str]:
    facts, words, system_words = key
    return _shape_strings(facts) + list(words) + [f"word:{name}:ask:system" for name in system_words]


def _add_spot(spots: dict[str, list[int] | None], name: str, at: int) -> None:
    if name not in spots:
        spots[name] = [at]
        return
    known = spots[name]
    if known is not None:  # None: searched in full already
        known.append(at)


def _trace_spots(ask: Spots, rest: Spots, ask_chars: int) -> Spots:
    """Where the traceback pattern may match in the whole user turn, from its spots in the ask and in the rest."""
    if "trace" not in ask and "trace" not in rest:
        return {}
    a, r = ask.get("trace", ()), rest.get("trace", ())
    if a is None or r is None:
        return {"trace": None}
    return {"trace": [*a, *(p + ask_chars for p in r)]}


@functools.cache
def _gram_index(ngrams: tuple[int, ...]) -> GramIndex:
    return GramIndex((_TASK_PATTERNS, _TRACEBACK), ngrams)


_CUE_CACHE_SIZE = 4096  # cues come from a small vocabulary; the bound only guards against surprises

# What decides a request's cues: its shape facts and the task words found in the ask, the rest and the system prompt.
_CueKey = tuple[_ShapeFacts, tuple[str, ...], tuple[str, ...]]


@dataclass(frozen=True)
class ClassifierModel:
    labels: tuple[str, ...]
    weights: np.ndarray  # (len(labels), dim) float32
    bias: np.ndarray  # (len(labels),), float32
    ngrams: tuple[int, ...] = (3, 4, 5)
    head_chars: int = 512
    tail_chars: int = 256
    # 0: the n-grams of the whole text in one space (models before these features). Otherwise: the system prompt's
    # n-grams apart, the user turn's first `ask_chars` characters hashed apart again, and the shape cues.
    ask_chars: int = 0
    system_chars: int = 256
    # Each cue id counts this many times: among a thousand n-grams (scaled by 1/sqrt(count)), one id would barely
    # move the scores (development set, docs/classifier.md: 0.84 accuracy with 4, 0.836 with 8, 0.82 with 16).
    cue_repeat: int = 4
    _cols: np.ndarray = field(init=False, repr=False, compare=False)
    _cue_cache: dict[str, int] = field(init=False, repr=False, compare=False)
    _cue_key_cache: dict[_CueKey, list[int]] = field(init=False, repr=False, compare=False)

    _marks: np.ndarray = field(init=False, repr=False, compare=False)
    _key_hashes: np.ndarray = field(init=False, repr=False, compare=False)
    # The C path's tables: one row of label weights per bucket (None where the C module is not there).
    _rows: np.ndarray | None = field(init=False, repr=False, compare=False)
    _bias32: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_cols", np.ascontiguousarray(self.weights, dtype=np.float32))
        object.__setattr__(self, "_cue_cache", {})
        object.__setattr__(self, "_cue_key_cache", {})
        native = _native is not None and self.ask_chars > 0 and max(self.ngrams) <= 16 and len(self.labels) <= 64
        # Padded to a multiple of 8 labels: the C pass adds a row in whole vector registers.
        rows = np.zeros((self.dim, -(-len(self.labels) // 8) * 8), np.float32) if native else None
        if rows is not None:
            rows[:, : len(self.labels)] = self._cols.T
        object.__setattr__(self, "_rows", rows)
        object.__setattr__(self, "_bias32", np.ascontiguousarray(self.bias, dtype=np.float32))
        # Buckets where a task-word or traceback literal may start, in the user turn's and the system prompt's spaces.
        grams, mask = _gram_index(self.ngrams), self.dim - 1
        plain = grams.table(lambda key: int(_hashed_ngrams(key, (len(key),), mask)[0]), self.dim)
        salted = grams.table(lambda key: int(_hashed_ngrams(key, (len(key),), mask, _SYSTEM_SALT)[0]), self.dim)
        object.__setattr__(self, "_marks", plain | salted)
        object.__setattr__(self, "_key_hashes", np.array(sorted(map(_rolling_hash, grams.keys)), dtype=np.uint64))

    @property
    def dim(self) -> int:
        return int(self.weights.shape[1])

    def features(self, text: str) -> np.ndarray:
        if not self.ask_chars:  # as such models were trained: system prompt and user turn joined by a newline
            text = text.replace(SYSTEM_SEPARATOR, "\n")
            return _hashed_ngrams(_bounded(text, self.head_chars, self.tail_chars).lower(), self.ngrams, self.dim - 1)
        system, user, lowered, lowered_system = self._parts(text)
        ids, blocks = self._ngram_ids(lowered, lowered_system)
        user_hits, system_hits = _hits(ids, blocks, self._marks)
        candidates = self._literal_candidates(user_hits, system_hits, lowered, lowered_system)
        cue_ids = self._cue_ids_of(self._cue_key(user, system, lowered, lowered_system, candidates))
        return np.concatenate([ids, np.repeat(np.array(cue_ids, dtype=np.intp), self.cue_repeat)])

    def _parts(self, text: str) -> tuple[str, str, str, str]:
        """(system prompt, user turn bounded to its head and tail, that lowered, the system prompt's read part
        lowered)."""
        system, _, user = text.rpartition(SYSTEM_SEPARATOR)
        user = _bounded(user, self.head_chars, self.tail_chars)
        return system, user, user.lower(), system[: self.system_chars].lower()

    @property
    def native(self) -> bool:
        """Whether this model scores with the C n-gram pass (the features are the same either way)."""
        return self._rows is not None

    def _native_predict(self, text: str) -> tuple[int, float, list[float]]:
        """(top label's index, its probability, the logits) from the C pass: the n-grams hashed and their weights
        summed in one go, then the cues as in `features`."""
        system, user, lowered, lowered_system = self._parts(text)
        rows, labels, marks = self._rows, len(self.labels), self._marks
        sums, count, user_hits, system_hits = _native.ngram_scores(
            lowered, lowered_system, self.ask_chars, self.ngrams, rows, labels, marks, self._key_hashes
        )
        candidates = self._literal_candidates(user_hits, system_hits, lowered, lowered_system)
        cue_ids = self._cue_ids_of(self._cue_key(user, system, lowered, lowered_system, candidates))
        result: tuple[int, float, list[float]] = _native.finish(
            sums, count, cue_ids, self.cue_repeat, rows, labels, marks, self._bias32
        )
        return result

    def _cue_key(
        self,
        user: str,
        system: str,
        lowered: str,
        lowered_system: str,
        candidates: tuple[dict[str, list[int] | None], ...],
    ) -> _CueKey:
        ask, rest, in_system = candidates
        facts = _shape_facts(user, system, self.ask_chars, lowered, _trace_spots(ask, rest, self.ask_chars))
        words = tuple(_task_words(lowered, self.ask_chars, ask, rest))
        found = tuple(_TASK_PATTERNS.matching(lowered_system, in_system)) if lowered_system else ()
        return facts, words, found

    def _ngram_ids(self, lowered: str, lowered_system: str) -> tuple[np.ndarray, list[tuple[int, int, int]]]:
        """Bucket ids of the user turn's n-grams, of its first `ask_chars` characters' (salted) and of the system
        prompt's (salted), from one rolling-hash pass over the two texts joined: the ask's n-grams are a prefix of
        the user turn's, n-grams across the join are left out. A numpy call costs about a microsecond whatever its
        size, so one pass instead of three saves most of the hashing time. Also (n, start, end) of the user turn's
        and the system prompt's runs in the ids (the system prompt's as n = -n)."""
        u, s = len(lowered), len(lowered_system)
        a = min(self.ask_chars, u)
        # uint32 code points: the first multiplication by the uint64 prime makes every hash uint64.
        codes = np.frombuffer((lowered + lowered_system).encode("utf-32-le"), dtype=np.uint32)
        sizes = sorted(self.ngrams)
        grams = {}
        h = codes
        for n in range(1, sizes[-1] + 1):
            if n > 1:
                h = h[:-1] * _PRIME + codes[n - 1 :]
            if n in self.ngrams:
                grams[n] = h
        runs = [grams[n][: max(u - n + 1, 0)] for n in sizes]  # the user turn
        ask_at = sum(run.size for run in runs)
        runs += [grams[n][: max(a - n + 1, 0)] for n in sizes]  # its ask
        system_at = sum(run.size for run in runs)
        runs += [grams[n][u : u + max(s - n + 1, 0)] for n in sizes]  # the system prompt
        hashed = np.concatenate(runs, dtype=np.uint64)
        hashed[ask_at:system_at] ^= _ASK_SALT
        hashed[system_at:] ^= _SYSTEM_SALT
        np.multiply(hashed, _MIX, out=hashed)  # in place: each new array costs as much as the arithmetic
        np.right_shift(hashed, _SHIFT, out=hashed)
        np.bitwise_and(hashed, np.uint64(self.dim - 1), out=hashed)
        blocks, start = [], 0
        for i, run in enumerate(runs):
            if run.size and (i < len(sizes) or i >= 2 * len(sizes)):  # the ask's own run is not searched
                n = sizes[i % len(sizes)]
                blocks.append((n if i < len(sizes) else -n, start, start + run.size))
            start += run.size
        return hashed.view(np.int64), blocks

    def _literal_candidates(
        self, user_hits: list[tuple[int, int]], system_hits: list[tuple[int, int]], lowered: str, lowered_system: str
    ) -> tuple[dict[str, list[int] | None], ...]:
        """The patterns (task words, traceback) that may match in the ask, in the rest of the user turn and in the
        system prompt, with where (Spots, each in its own part's coordinates): where an n-gram (n, start) falls in a
        marked bucket and its text is a literal's leading n-gram."""
        grams, a = _gram_index(self.ngrams), self.ask_chars
        ask = grams.short_candidates(lowered[:a])
        rest = grams.short_candidates(lowered[a:])
        system = grams.short_candidates(lowered_system)
        keys = grams.keys
        for n, p in user_hits:
            for name in keys.get(lowered[p : p + n], ()):
                if p < a:
                    _add_spot(ask, name, p)
                else:
                    _add_spot(rest, name, p - a)
        for n, p in system_hits:
            for name in keys.get(lowered_system[p : p + n], ()):
                _add_spot(system, name, p)
        return ask, rest, system

    def _cue_ids_of(self, key: _CueKey) -> list[int]:
        """The cue ids of a cue key: its strings built and hashed once per distinct key, a few hundred in all."""
        cue_ids = self._cue_key_cache.get(key)
        if cue_ids is None:
            cue_ids = self._cue_ids(_cue_strings(key))
            if len(self._cue_key_cache) < _CUE_CACHE_SIZE:
                self._cue_key_cache[key] = cue_ids
        return cue_ids

    def _cue_ids(self, cues: list[str]) -> list[int]:
        """Bucket ids of the cues, remembered: a model meets a few hundred distinct cue strings."""
        known = self._cue_cache
        cached = [known.get(c) for c in cues]
        if None not in cached:
            return cached  # type: ignore[return-value]  # no None in it
        ids = [zlib.crc32(c.encode()) & (self.dim - 1) for c in cues]
        if len(known) < _CUE_CACHE_SIZE:
            known.update(zip(cues, ids, strict=True))
        return ids

    def _logits(self, feats: np.ndarray) -> np.ndarray:
        if feats.size == 0:
            return self.bias.astype(np.float64)
        # One gather along each label's row of weights: 3x faster than gathering (dim, labels) rows (measured: 15
        # vs 42 us for 1,500 features). Annotated: numpy's stubs type arithmetic on arrays as Any.
        logits: np.ndarray = np.take(self._cols, feats, axis=1).sum(axis=1) / math.sqrt(feats.size) + self.bias
        return logits

    def probabilities(self, text: str) -> np.ndarray:
        z = np.array(self._native_predict(text)[2]) if self.native else self._logits(self.features(text))
        z = np.exp(z - z.max())
        p: np.ndarray = z / z.sum()
        return p

    def predict(self, text: str) -> tuple[str, float]:
        """The top label and its probability. Same numbers as `probabilities`, in plain Python: with a handful of
        labels, numpy's per-call overhead is most of a softmax's cost."""
        if self.native:
            top, probability, _ = self._native_predict(text)
            return self.labels[top], probability
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
            "parts": np.array([self.ask_chars, self.system_chars, self.cue_repeat], dtype=np.int64),
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
            # Absent from models made before the system / ask / cue features: they read the text as one.
            ask, system, repeat = (int(x) for x in arrays["parts"].tolist()) if "parts" in arrays else (0, 256, 1)
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not a specgate classifier model: {exc}") from None
        if weights.ndim != 2 or weights.shape[0] != len(labels) or bias.shape != (len(labels),) or not labels:
            raise ValueError("classifier arrays have inconsistent shapes")
        dim = weights.shape[1]
        if not ngrams or min(ngrams) < 1 or dim < 2 or dim & (dim - 1):
            raise ValueError("classifier n-gram sizes are invalid or its dimension is not a power of two")
        if not np.isfinite(weights).all() or not np.isfinite(bias).all():
            raise ValueError("classifier weights are not finite")
        if ask < 0 or system < 0 or repeat < 1:
            raise ValueError("classifier ask / system window is negative or its cue repeat below 1")
        return cls(labels, weights, bias, ngrams, head, tail, ask, system, repeat)


def train(
    texts: Sequence[str],
    labels: Sequence[str],
    *,
    label_set: Sequence[str] | None = None,
    dim: int = 1 << 16,
    epochs: int = 6,
    lr: float = 0.4,
    seed: int = 0,
    average_seeds: int = 1,
    ngrams: tuple[int, ...] = (3, 4, 5),
    head_chars: int = 512,
    tail_chars: int = 256,
    ask_chars: int = 160,
    system_chars: int = 256,
    cue_repeat: int = 4,
) -> ClassifierModel:
    """Multinomial logistic regression by SGD over hashed n-gram features (deterministic for a seed).

    With `average_seeds` > 1 the model is trained from seeds `seed`, `seed + 1`, ... and their weights averaged:
    the logits are linear in the weights, so that is the mean of the runs' logits, at one model's size and cost
    (the runs' accuracy on hand-written prompts differed by up to 4 points from seed to seed)."""
    if dim < 2 or dim & (dim - 1):
        raise ValueError("dim must be a power of two")
    if ask_chars < 0 or system_chars < 0 or cue_repeat < 1:
        raise ValueError("ask_chars and system_chars must be >= 0 and cue_repeat >= 1")
    if head_chars < 0 or tail_chars < 0 or not ngrams or min(ngrams) < 1:
        raise ValueError("head_chars and tail_chars must be >= 0 and n-gram sizes >= 1")
    if average_seeds < 1:
        raise ValueError("average_seeds must be >= 1")
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
        ask_chars,
        system_chars,
        cue_repeat,
    )
    feats = [shell.features(t) for t in texts]
    y = np.array([index[label] for label in labels])
    runs = [_sgd(feats, y, (dim, len(names)), epochs, lr, seed + i) for i in range(average_seeds)]
    rows = np.stack([r for r, _ in runs]).mean(axis=0, dtype=np.float32)
    bias = np.stack([b for _, b in runs]).mean(axis=0, dtype=np.float32)
    return dataclasses.replace(shell, weights=np.ascontiguousarray(rows.T), bias=bias)


def _sgd(
    feats: Sequence[np.ndarray], y: np.ndarray, shape: tuple[int, int], epochs: int, lr: float, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """(weights in the scoring layout, one row of label weights per bucket; bias) of one SGD run."""
    rows = np.zeros(shape, np.float32)
    b = np.zeros(shape[1], np.float32)
    rng = np.random.default_rng(seed)
    for epoch in range(epochs):
        step = lr / (1.0 + epoch)
        for i in rng.permutation(len(feats)):
            f = feats[i]
            if f.size == 0:
                continue
            scale = 1.0 / math.sqrt(f.size)
            z = rows[f].sum(axis=0) * scale + b
            p = np.exp(z - z.max())
            p /= p.sum()
            p[y[i]] -= 1.0
            np.add.at(rows, f, (-step * scale * p).astype(np.float32))
            b -= (step * p).astype(np.float32)
    return rows, b


def confusion(model: ClassifierModel, texts: Sequence[str], labels: Sequence[str]) -> tuple[np.ndarray, float]:
    """(confusion matrix rows=true, cols=predicted in model.labels order, accuracy)."""
    index = {name: i for i, name in enumerate(model.labels)}
    matrix = np.zeros((len(model.labels), len(model.labels)), dtype=np.int64)
    for text, label in zip(texts, labels, strict=True):
        predicted, _ = model.predict(text)
        matrix[index[label], index[predicted]] += 1
    total = matrix.sum()
    return matrix, float(np.trace(matrix) / total) if total else 0.0
