"""Regular expressions searched only where they can match: at a literal that every one of their matches contains.

Python's `re` tries each branch of a long alternation at every position of the text; a literal is found by one fast
scan. The literals are read off the pattern itself (CPython's own parser), so there is no second list to keep in
step with it, and answers are the same as searching every pattern in full: a pattern is searched wherever one of its
literals occurs, and a pattern without a guaranteed literal is always searched.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

_sre: Any = None
_sre_parse_module: Any = None
_sre_parse: Callable[[str], Any] | None = None
try:  # CPython's parser of regular expressions (private, there since 3.11): only to read the literals off a pattern
    _sre = importlib.import_module("re._constants")
    _sre_parse_module = importlib.import_module("re._parser")
    _sre_parse = _sre_parse_module.parse
except (ImportError, AttributeError):  # pragma: no cover - then every pattern is searched in full (same answers)
    _sre_parse = None

__all__ = ["GramIndex", "PatternSet", "Spots", "literal_reach", "required_literals"]

# Candidate patterns by name, each with the positions where one of its literals may start (a superset of those where
# one does), or None where it is to be searched in the whole text.
Spots = Mapping[str, Sequence[int] | None]


# A literal with how far into a match it may start at most (None: no bound).
_Found = dict[str, int | None]


def _width(op: Any, av: Any, state: Any) -> int | None:
    """The longest text one parsed item can match (None: unbounded)."""
    width = int(_sre_parse_module.SubPattern(state, [(op, av)]).getwidth()[1])
    return width if width < _sre.MAXREPEAT else None


def _shifted(found: _Found, by: int | None) -> _Found:
    return {lit: None if by is None or at is None else by + at for lit, at in found.items()}


def _required(items: Any, state: Any) -> _Found | None:
    """The literals one of which every match of `items` contains, each with the furthest into the match it starts
    (an occurrence of it does, in every match)."""
    best: _Found | None = None

    def consider(found: _Found | None, at: int | None) -> None:
        nonlocal best
        if found and (best is None or min(map(len, found)) > min(map(len, best))):
            best = _shifted(found, at)

    run: list[str] = []
    run_at: int | None = 0
    prefix: int | None = 0  # the longest text the items so far can match
    for op, av in [*items, (None, None)]:
        if op is _sre.LITERAL:
            if not run:
                run_at = prefix
            run.append(chr(av))
            prefix = None if prefix is None else prefix + 1
            continue
        if run:
            consider({"".join(run): 0}, run_at)
            run = []
        if op is None:
            break
        if op is _sre.SUBPATTERN:
            consider(_required(av[-1], state), prefix)
        elif op is _sre.BRANCH:
            alternatives = [_required(alt, state) for alt in av[1]]
            if all(alternatives):
                merged: _Found = {}
                for found in alternatives:
                    for lit, at in found.items():  # type: ignore[union-attr]  # all() narrowed them
                        known = merged.get(lit, 0)
                        merged[lit] = None if at is None or known is None else max(at, known)
                consider(merged, prefix)
        elif op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT) and av[0] >= 1:
            consider(_required(av[2], state), prefix)  # the first repetition holds one
        width = _width(op, av, state) if prefix is not None else None
        prefix = None if prefix is None or width is None else prefix + width
    return best


def _literals(pattern: str) -> _Found:
    """Strings one of which every match of `pattern` contains, with how far into a match they start at most; none
    contained in another; empty where the pattern guarantees no literal (or the parser is not there)."""
    try:
        parsed = _sre_parse(pattern) if _sre_parse is not None else None
        found = _required(parsed, parsed.state) if parsed is not None else None
    except Exception:  # a private parser whose shapes may change: then the pattern is searched in full
        found = None
    found = found or {}
    # "implement" covers "implementa": where the longer starts, the shorter does, just as far into the match.
    return {a: at for a, at in found.items() if not any(b != a and b in a for b in found)}


def required_literals(pattern: str) -> frozenset[str]:
    """Strings one of which every match of `pattern` contains (from literal runs, branches and repeats of at least
    one; of the candidate sets, the one whose shortest string is longest), none contained in another; empty where the
    pattern guarantees no literal (or the parser is not there)."""
    return frozenset(_literals(pattern))


def literal_reach(pattern: str) -> int | None:
    """How far into a match of `pattern` one of its required literals starts at most (None: no bound known)."""
    found = _literals(pattern)
    if not found or any(at is None for at in found.values()):
        return None
    return max(at for at in found.values() if at is not None)


class PatternSet:
    """Named patterns, each searched only in text holding one of its literals.

    `candidates` finds the literals of all patterns in one scan (an alternation of plain strings) that restarts one
    character after each hit, so literals inside or overlapping others are seen too; at one position it reports the
    longest literal there, which vouches for the patterns of the literals that are its prefixes."""

    __slots__ = ("_always", "_patterns", "_reach", "_scan", "_vouches", "literals")

    def __init__(self, patterns: Mapping[str, str]) -> None:
        self._patterns = tuple((name, re.compile(pattern)) for name, pattern in patterns.items())
        self._reach = {name: literal_reach(pattern) for name, pattern in patterns.items()}
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

    def matching(
        self, text: str, candidates: Collection[str] | Spots | None = None, skip: Collection[str] = ()
    ) -> list[str]:
        """Names of the patterns found in `text`, in their order, leaving out `skip`. `candidates`: a superset of
        them known already (see GramIndex), else found by the scan; as Spots, with where their literals may start,
        each is searched only around those places."""
        names = self.candidates(text) if candidates is None else candidates
        spots = candidates if isinstance(candidates, Mapping) else {}
        return [
            name
            for name, pattern in self._patterns
            if name in names and name not in skip and self._found(pattern, self._reach[name], text, spots.get(name))
        ]

    @staticmethod
    def _found(pattern: re.Pattern[str], reach: int | None, text: str, starts: Sequence[int] | None) -> bool:
        """Whether `pattern` matches in `text`. With `starts` (every place one of its literals starts, perhaps more)
        and a bound on how far into a match a literal starts (`reach`), a match is tried only at the reach's
        starting points before each place: every match starts at one of them. Otherwise a search of the text."""
        if starts is None or reach is None:
            return pattern.search(text) is not None
        match = pattern.match
        if reach == 0:
            return any(match(text, at) for at in starts)
        tried: set[int] = set()
        for at in starts:
            for begin in range(max(at - reach, 0), at + 1):
                if begin not in tried:
                    tried.add(begin)
                    if match(text, begin):
                        return True
        return False

    def anchors(self, name: str) -> frozenset[str]:
        """The literals scanned for `name` (empty: it is searched in full)."""
        return frozenset(literal for literal, names in self.literals.items() if name in names)


class GramIndex:
    """Where the literals of some PatternSets may start, read off the character n-gram buckets a hashed-n-gram model
    computes anyway: a literal starts with its leading n-gram (the longest of the model's sizes that fits), so a
    position whose n-gram falls in a marked bucket is a candidate, confirmed by the n-gram's text. Literals shorter
    than every size are looked for with `in`."""

    __slots__ = ("_ascii_short", "_by_first", "_other_firsts", "keys", "short")

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
        # The others are looked for only where the text holds their first character (one scan finds which).
        by_first: dict[str, list[tuple[str, frozenset[str]]]] = {}
        for literal, owners in self.short:
            if not literal.isascii():
                by_first.setdefault(literal[0], []).append((literal, owners))
        self._by_first = {first: tuple(items) for first, items in by_first.items()}
        firsts = sorted(by_first)
        self._other_firsts = re.compile("[" + "".join(map(re.escape, firsts)) + "]") if firsts else None

    def table(self, bucket: Callable[[str], int], size: int) -> np.ndarray:
        """(size,) booleans marking the buckets of the leading n-grams, as `bucket` places an n-gram."""
        marks = np.zeros(size, dtype=bool)
        for key in self.keys:
            marks[bucket(key)] = True
        return marks

    def short_candidates(self, text: str) -> dict[str, list[int] | None]:
        """The patterns that may match in `text` for a literal shorter than every n-gram size, with where those
        literals start (Spots)."""
        names: dict[str, list[int] | None] = {}
        wanted = self._ascii_short
        if not text.isascii() and self._other_firsts is not None:
            # A text mixing scripts holds few of the first characters: only their literals are looked for.
            for first in set(self._other_firsts.findall(text)):
                wanted += self._by_first[first]
        for literal, owners in wanted:
            at = text.find(literal)
            if at < 0:
                continue
            starts = []
            while at >= 0:
                starts.append(at)
                at = text.find(literal, at + 1)
            for name in owners:
                known = names.setdefault(name, [])
                if known is not None:
                    known.extend(starts)
        return names
