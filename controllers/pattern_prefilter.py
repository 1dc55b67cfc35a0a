"""Regular expressions searched only where they can match: at a literal that every one of their matches contains.

Python's `re` tries each branch of a long alternation at every position of the text; a literal is found by one fast
scan. The literals are read off the pattern itself (CPython's own parser), so there is no second list to keep in
step with it, and answers are the same as searching every pattern in full: a pattern is searched wherever one of its
literals occurs, and a pattern without a guaranteed literal is always searched.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

import numpy as np

_sre: Any = None
_sre_parse: Callable[[str], Any] | None = None
try:  # CPython's parser of regular expressions (private, there since 3.11): only to read the literals off a pattern
    _sre = importlib.import_module("re._constants")
    _sre_parse = importlib.import_module("re._parser").parse
except (ImportError, AttributeError):  # pragma: no cover - then every pattern is searched in full (same answers)
    _sre_parse = None

__all__ = ["GramIndex", "PatternSet", "required_literals"]


def _required(items: Any) -> frozenset[str] | None:
    best: frozenset[str] | None = None

    def consider(found: frozenset[str] | None) -> None:
        nonlocal best
        if found and (best is None or min(map(len, found)) > min(map(len, best))):
            best = found

    run: list[str] = []
    for op, av in [*items, (None, None)]:
        if op is _sre.LITERAL:
            run.append(chr(av))
            continue
        if run:
            consider(frozenset(["".join(run)]))
            run = []
        if op is _sre.SUBPATTERN:
            consider(_required(av[-1]))
        elif op is _sre.BRANCH:
            alternatives = [_required(alt) for alt in av[1]]
            if all(alternatives):
                consider(frozenset().union(*alternatives))  # type: ignore[arg-type]  # all() narrowed them
        elif op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT) and av[0] >= 1:
            consider(_required(av[2]))
    return best


def required_literals(pattern: str) -> frozenset[str]:
    """Strings one of which every match of `pattern` contains (from literal runs, branches and repeats of at least
    one; of the candidate sets, the one whose shortest string is longest), none contained in another; empty where the
    pattern guarantees no literal (or the parser is not there)."""
    try:
        found = _required(_sre_parse(pattern)) if _sre_parse is not None else None
    except Exception:  # a private parser whose shapes may change: then the pattern is searched in full
        found = None
    found = found or frozenset()
    return frozenset(a for a in found if not any(b != a and b in a for b in found))  # "implement" covers "implementa"


class PatternSet:
    """Named patterns, each searched only in text holding one of its literals.

    `candidates` finds the literals of all patterns in one scan (an alternation of plain strings) that restarts one
    character after each hit, so literals inside or overlapping others are seen too; at one position it reports the
    longest literal there, which vouches for the patterns of the literals that are its prefixes."""

    __slots__ = ("_always", "_patterns", "_scan", "_vouches", "literals")

    def __init__(self, patterns: Mapping[str, str]) -> None:
        self._patterns = tuple((name, re.compile(pattern)) for name, pattern in patterns.items())
        owners: dict[str, set[str]] = {}
        always = set()
        for name, pattern in patterns.items():
            found = required_literals(pattern)
            if not found:
                always.add(name)
            for literal in found:
                owners.setdefault(literal, set()).add(name)
        self._always = frozenset(always)
        self.literals: Mapping[str, frozenset[str]] = {literal: frozenset(names) for literal, names in owners.items()}
        ordered = sorted(owners, key=lambda a: (-len(a), a))
        self._scan = re.compile("|".join(map(re.escape, ordered))) if ordered else None
        self._vouches = {
            hit: frozenset(name for literal, names in owners.items() if hit.startswith(literal) for name in names)
            for hit in ordered
        }

    @property
    def always(self) -> frozenset[str]:
        """Patterns without a guaranteed literal: candidates in any text."""
        return self._always

    def candidates(self, text: str) -> set[str]:
        """Names of the patterns that may match in `text` (a superset of those that do)."""
        names = set(self._always)
        if self._scan is not None:
            search, vouches = self._scan.search, self._vouches
            hit = search(text)
            while hit is not None:
                names |= vouches[hit.group()]
                hit = search(text, hit.start() + 1)
        return names

    def matching(self, text: str, candidates: Collection[str] | None = None, skip: Collection[str] = ()) -> list[str]:
        """Names of the patterns found in `text`, in their order, leaving out `skip`. `candidates`: a superset of
        them known already (see GramIndex), else found by the scan."""
        names = self.candidates(text) if candidates is None else candidates
        return [name for name, pattern in self._patterns if name in names and name not in skip and pattern.search(text)]

    def anchors(self, name: str) -> frozenset[str]:
        """The literals scanned for `name` (empty: it is searched in full)."""
        return frozenset(literal for literal, names in self.literals.items() if name in names)


class GramIndex:
    """Where the literals of some PatternSets may start, read off the character n-gram buckets a hashed-n-gram model
    computes anyway: a literal starts with its leading n-gram (the longest of the model's sizes that fits), so a
    position whose n-gram falls in a marked bucket is a candidate, confirmed by the n-gram's text. Literals shorter
    than every size are looked for with `in`."""

    __slots__ = ("_ascii_short", "keys", "short")

    def __init__(self, sets: Iterable[PatternSet], ngrams: Collection[int]) -> None:
        keys: dict[str, set[str]] = {}
        short: dict[str, set[str]] = {}
        for patterns in sets:
            for literal, names in patterns.literals.items():
                fits = [n for n in ngrams if n <= len(literal)]
                if fits:
                    keys.setdefault(literal[: max(fits)], set()).update(names)
                else:
                    short.setdefault(literal, set()).update(names)
        self.keys: Mapping[str, frozenset[str]] = {k: frozenset(v) for k, v in keys.items()}
        self.short: tuple[tuple[str, frozenset[str]], ...] = tuple((k, frozenset(v)) for k, v in sorted(short.items()))
        # An ASCII text cannot hold a literal that is not: for most prompts only a few are looked for.
        self._ascii_short = tuple((k, v) for k, v in self.short if k.isascii())

    def table(self, bucket: Callable[[str], int], size: int) -> np.ndarray:
        """(size,) booleans marking the buckets of the leading n-grams, as `bucket` places an n-gram."""
        marks = np.zeros(size, dtype=bool)
        for key in self.keys:
            marks[bucket(key)] = True
        return marks

    def short_candidates(self, text: str) -> set[str]:
        names: set[str] = set()
        for literal, owners in self._ascii_short if text.isascii() else self.short:
            if literal in text:
                names |= owners
        return names
