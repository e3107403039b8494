"""Rule matching: which rule of one scope decides a call (decision 0001-policy-verdicts).

Of the rules whose tool glob and argument globs all match, the most
restrictive wins (deny > ask > allow), ties going to the earlier rule in the
YAML. Testing each candidate's regex in turn costs a Python-level call per
rule, and a tool with a long allow list (a ``Bash`` tool with a hundred
command rules) pays it on every simple command of every line. So the rules a
tool name can meet are put in *priority order* (most restrictive first, then
YAML order), where the winner is simply the first rule that matches, and:

- the first rule without argument globs ends the list: nothing after it can
  win, and it is the answer when nothing before it matches;
- the rules with one argument glob are combined, per argument name, into one
  regex alternation in priority order (literal globs into a dict). ``re``
  tries alternatives in order and returns the first that matches the whole
  value, which is the earliest matching rule of that argument; an empty
  group at the end of each alternative names it (``lastindex``). The
  alternation is split by the value's first character (a glob starting with
  ``g`` cannot match ``ls``), so a long allow list costs a few alternatives;
- the rare rules with several argument globs are tested one by one, and only
  while they could still beat the best position found.

The smallest position found wins. A tool name's matcher is built on its first
call and memoised (bounded: tool names come from agents); names with the same
candidate rules share one matcher, so a stream of invented names compiles no
new regex while they only meet the same tool globs.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from tapgate.errors import PolicyError
from tapgate.gate.models import canonical_json
from tapgate.policy.rules import Rule

__all__ = ["Glob", "Scope", "compile_glob", "is_glob"]

Glob = Callable[[str], "re.Match[str] | None"]
"""A compiled glob: ``match(text)`` is not ``None`` when the whole text matches."""

_RANK = {"allow": 0, "ask": 1, "deny": 2}
_GLOB_CHARS = frozenset("*?[")
_CACHE_SIZE = 4096


def compile_glob(pattern: str, source: str) -> Glob:
    """Compile a glob once; case-sensitive, ``*`` crosses ``/`` (fnmatch semantics)."""
    return re.compile(_translate(pattern, source), re.DOTALL).match


def _translate(pattern: str, source: str) -> str:
    if not pattern:
        raise PolicyError(source, "empty glob")
    return fnmatch.translate(pattern)


def is_glob(pattern: str) -> bool:
    """Whether ``pattern`` has a wildcard; one without matches only itself."""
    return any(c in _GLOB_CHARS for c in pattern)


def _arg_text(value: Any) -> str:
    """What an argument glob is matched against: strings as-is, the rest as JSON."""
    return value if isinstance(value, str) else canonical_json(value)


@dataclass(frozen=True, slots=True)
class _Prepared:
    """A rule checked at load: its tool glob compiled, its argument globs translated."""

    index: int
    rule: Rule
    tool_match: Glob
    args: tuple[tuple[str, str], ...]  # (argument, glob), validated


def _prepare(index: int, rule: Rule) -> _Prepared:
    args = tuple(rule.args.items())
    for name, pattern in args:
        _translate(pattern, f"{rule.source}.args.{name}")  # a bad glob fails at load
    return _Prepared(index, rule, compile_glob(rule.tool, f"{rule.source}.tool"), args)


@dataclass(frozen=True, slots=True)
class _Alternation:
    """Globs in priority order as one regex; ``positions[m.lastindex]`` is the rule's."""

    match: Glob
    positions: tuple[int, ...]  # group number -> position


def _alternation(globs: Sequence[tuple[int, str]]) -> _Alternation | None:
    if not globs:
        return None
    regex = re.compile(
        "|".join(f"{fnmatch.translate(pattern)}(?P<p{position}>)" for position, pattern in globs),
        re.DOTALL,
    )
    positions = [0] * (regex.groups + 1)
    for group, number in regex.groupindex.items():
        positions[number] = int(group[1:])
    return _Alternation(regex.match, tuple(positions))


@dataclass(frozen=True, slots=True)
class _Argument:
    """One argument's single-glob rules: literals by value, the rest by first character.

    A glob that starts with a literal character can only match a value that
    starts with it, so each first character gets its own alternation (those
    globs and the ones that start with a wildcard, still in priority order):
    a long allow list of commands is then a handful of alternatives per value.
    """

    name: str
    exact: Mapping[str, int]  # value -> earliest position
    by_first: Mapping[str, _Alternation]
    other: _Alternation | None  # a value no literal-first glob can match


def _argument(name: str, globs: Sequence[tuple[int, str]]) -> _Argument:
    exact: dict[str, int] = {}
    wild: list[tuple[int, str]] = []
    for position, pattern in globs:  # in priority order
        if not is_glob(pattern):
            exact.setdefault(pattern, position)
        elif pattern[0] in _GLOB_CHARS:
            wild.append((position, pattern))
    firsts = {p[0] for _, p in globs if is_glob(p) and p[0] not in _GLOB_CHARS}
    by_first = {
        c: _alternation([(q, p) for q, p in globs if is_glob(p) and p[0] in (c, *_GLOB_CHARS)])
        for c in firsts
    }
    return _Argument(name, exact, {c: a for c, a in by_first.items() if a}, _alternation(wild))


class _Matcher:
    """The candidate rules of one tool name, compiled to decide in one pass per argument."""

    __slots__ = ("_arguments", "_cut", "_multi", "_rules")

    def __init__(self, ordered: Sequence[_Prepared]) -> None:
        cut = next((p for p, c in enumerate(ordered) if not c.args), len(ordered))
        kept = ordered[: cut + 1]
        self._rules = tuple(c.rule for c in kept)
        self._cut = cut
        single: dict[str, list[tuple[int, str]]] = {}
        multi: list[tuple[int, tuple[tuple[str, Glob], ...]]] = []
        for position, c in enumerate(kept[:cut]):
            if len(c.args) == 1:
                name, pattern = c.args[0]
                single.setdefault(name, []).append((position, pattern))
            else:
                globs = tuple((n, compile_glob(p, f"{c.rule.source}.args.{n}")) for n, p in c.args)
                multi.append((position, globs))
        self._arguments = tuple(_argument(n, g) for n, g in single.items())
        self._multi = tuple(multi)

    def decide(self, args: Mapping[str, Any]) -> Rule | None:
        """The first rule in priority order whose argument globs all match ``args``."""
        best = self._cut
        for a in self._arguments:
            if a.name not in args:
                continue
            value = args[a.name]
            text = value if isinstance(value, str) else canonical_json(value)
            position = a.exact.get(text, best)
            if position < best:  # noqa: PLR1730 -- hot path: cheaper than calling min()
                best = position
            alternation = a.by_first.get(text[:1], a.other)
            if alternation is not None:
                m = alternation.match(text)
                if m is not None:
                    position = alternation.positions[m.lastindex or 0]
                    if position < best:  # noqa: PLR1730 -- as above
                        best = position
        for position, globs in self._multi:
            if position >= best:
                break
            if all(n in args and g(_arg_text(args[n])) is not None for n, g in globs):
                best = position
                break
        return self._rules[best] if best < len(self._rules) else None


class Scope:
    """One scope's rules (an agent's, or the global ones), matched per tool name."""

    def __init__(self, rules: Sequence[Rule]) -> None:
        prepared = [_prepare(i, r) for i, r in enumerate(rules)]
        self._prepared = prepared
        self._exact: dict[str, list[_Prepared]] = {}
        self._globs: list[_Prepared] = []
        for c in prepared:
            if is_glob(c.rule.tool):
                self._globs.append(c)
            else:
                self._exact.setdefault(c.rule.tool, []).append(c)
        self._matcher = lru_cache(maxsize=_CACHE_SIZE)(self._build)
        self.matcher = lru_cache(maxsize=_CACHE_SIZE)(self._matcher_for)

    def _matcher_for(self, tool: str) -> _Matcher:
        """The matcher of the rules that can apply to ``tool``, in priority order."""
        found = list(self._exact.get(tool, ()))
        found += [c for c in self._globs if c.tool_match(tool)]
        found.sort(key=lambda c: (-_RANK[c.rule.action], c.index))
        return self._matcher(tuple(c.index for c in found))

    def _build(self, key: tuple[int, ...]) -> _Matcher:
        return _Matcher([self._prepared[i] for i in key])

    def decide(self, tool: str, args: Mapping[str, Any]) -> Rule | None:
        """The most restrictive matching rule of this scope (the earliest among equals)."""
        return self.matcher(tool).decide(args)
