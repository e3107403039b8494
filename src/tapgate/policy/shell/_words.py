"""Words: quoting, escapes and expansions, read as the shell would read them.

One word is the unit the hazard rules see, so its value must be what the shell
would pass (``'r'm`` and ``$'\\x72m'`` are both ``rm``), and every command hidden
inside it (``$(...)``, backticks, ``<(...)``, and substitutions inside ``${...}``
or ``$((...))``) must be parsed too. This module reads words; how words form
commands (operators, redirections, here-documents) is :mod:`._lexer`'s, which
subclasses :class:`WordReader` and supplies the parsing of nested command lists.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager

from tapgate.policy.shell._model import MAX_DEPTH, Findings

__all__ = ["WordReader"]

_META = frozenset(" \t\n;&|()<>")
_PLAIN = re.compile(r"[^ \t\n;&|()<>'\"\\$`]+")
_DQ_PLAIN = re.compile(r'[^"\\$`]+')
_ANSI = re.compile(
    r"\\(x[0-9A-Fa-f]{1,2}|[0-7]{1,3}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}|c.|.)", re.S
)
_ANSI_CHARS = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b"}


class WordReader(ABC):
    """The position in one text and the reading of the words in it; fails closed."""

    def __init__(self, src: str, found: Findings, depth: int) -> None:
        self.src, self.found, self.depth = src, found, depth
        self.pos = 0
        self.aborted = False
        self.not_arith: set[int] = set()

    def _fail(self, reason: str) -> None:
        """Stop this text at the first reason it cannot be parsed."""
        if not self.aborted:
            self.found.hazard(reason)
        self.aborted = True
        self.pos = len(self.src)

    @contextmanager
    def _level(self) -> Iterator[bool]:
        if self.depth >= MAX_DEPTH:
            self._fail("unparsable: nesting too deep")
            yield False
            return
        self.depth += 1
        try:
            yield True
        finally:
            self.depth -= 1

    @abstractmethod
    def _sub(self, text: str, *, heredoc: bool = False) -> None:
        """Parse a text that the shell would parse again (backticks, ``bash -c``, ``eval``)."""

    @abstractmethod
    def _nested(self, missing: str) -> None:
        """Parse a command list up to its closing ``)``, failing with ``missing`` without one."""

    def _at_word(self) -> bool:
        c = self.src[self.pos : self.pos + 1]
        return c != "" and (
            c not in _META or (c in "<>" and self.src[self.pos + 1 : self.pos + 2] == "(")
        )

    def _word(self) -> tuple[str, str]:
        """Read one word: its value without quotes, and its source text."""
        start, out, src = self.pos, [], self.src
        while self._at_word():
            plain = _PLAIN.match(src, self.pos)
            if plain:
                out.append(plain.group())
                self.pos = plain.end()
            elif not self._part(out):
                out.append(src[self.pos])
                self.pos += 1
        return "".join(out), src[start : self.pos]

    def _part(self, out: list[str]) -> bool:
        """Read a quoted, escaped or expanded part of a word, if one starts here."""
        src, pos = self.src, self.pos
        c = src[pos]
        if c == "\\":
            if pos + 1 >= len(src):
                out.append(c)
                self._fail("unparsable: trailing backslash")
                return True
            if src[pos + 1] != "\n":
                out.append(src[pos + 1])
            self.pos += 2
        elif c == "'":
            end = src.find("'", pos + 1)
            out.append(src[pos + 1 : end if end >= 0 else len(src)])
            self.pos = end + 1
            if end < 0:
                self._fail("unparsable: unterminated quote")
        elif c == '"':
            self.pos += 1
            self._dquote(out, '"')
        elif c == "$":
            self._dollar(out, in_dquote=False)
        elif c == "`":
            self._backtick(out)
        elif c in "<>" and src.startswith("(", pos + 1):
            self._subst(out, "process substitution", "unbalanced parenthesis")
        else:
            return False
        return True

    def _dquote(self, out: list[str], end: str | None) -> None:
        """Read up to the closing ``end`` quote (None: a here-document body, to the end)."""
        src = self.src
        while self.pos < len(src):
            plain = _DQ_PLAIN.match(src, self.pos)
            if plain:
                out.append(plain.group())
                self.pos = plain.end()
                continue
            c, nxt = src[self.pos], src[self.pos + 1 : self.pos + 2]
            if c == end:
                self.pos += 1
                return
            if c == "\\" and nxt and nxt in '"\\$`\n':
                out.append(nxt if nxt != "\n" else "")
                self.pos += 2
            elif c == "$":
                self._dollar(out, in_dquote=True)
            elif c == "`":
                self._backtick(out)
            else:
                out.append(c)
                self.pos += 1
        if end is not None:
            self._fail("unparsable: unterminated quote")

    def _dollar(self, out: list[str], *, in_dquote: bool) -> None:
        src, pos = self.src, self.pos
        nxt = src[pos + 1 : pos + 2]
        if src.startswith("$((", pos) and self._arith(out, 3):
            return
        if nxt == "(":
            self._subst(out, "command substitution", "unterminated command substitution")
        elif nxt == "{":
            self._braced(out)
        elif nxt == "'" and not in_dquote:
            self._ansi(out)
        elif nxt == '"' and not in_dquote:
            self.pos += 1  # $"..." is an ordinary double-quoted string
        else:
            out.append("$")
            self.pos += 1

    def _subst(self, out: list[str], hazard: str, missing: str) -> None:
        """``$(...)``, ``<(...)`` or ``>(...)``: its commands run too."""
        start = self.pos
        self.found.hazard(hazard)
        self.pos += 2
        self._nested(missing)
        out.append(self.src[start : self.pos])

    def _backtick(self, out: list[str]) -> None:
        src, start = self.src, self.pos
        i, inner = start + 1, []
        while i < len(src) and src[i] != "`":
            if src[i] == "\\" and src[i + 1 : i + 2] in ("`", "\\", "$"):
                i += 1
            inner.append(src[i])
            i += 1
        self.found.hazard("command substitution")
        self._sub("".join(inner))
        self.pos = min(i + 1, len(src))
        out.append(src[start : self.pos])
        if i >= len(src):
            self._fail("unparsable: unterminated backquote")

    def _braced(self, out: list[str]) -> None:
        """``${...}``: plain text, but substitutions inside it still run."""
        start, src, depth = self.pos, self.src, 1
        scratch: list[str] = []
        self.pos += 2
        with self._level() as ok:
            while ok and self.pos < len(src):
                c = src[self.pos]
                if c in "{}":
                    depth += 1 if c == "{" else -1
                    self.pos += 1
                    if depth == 0:
                        out.append(src[start : self.pos])
                        return
                elif not self._part(scratch):
                    self.pos += 1
        self._fail("unparsable: unterminated ${")
        out.append(src[start:])

    def _arith(self, out: list[str], skip: int) -> bool:
        """``$((...))`` / ``((...))``; False (and nothing consumed) if it is really ``$( (`` ."""
        start, src, depth = self.pos, self.src, 0
        if start in self.not_arith:
            return False
        marks = len(self.found.commands), len(self.found.hazards)
        self.pos += skip
        with self._level() as ok:
            while ok and self.pos < len(src):
                c = src[self.pos]
                if c == ")" and depth == 0:
                    if src.startswith("))", self.pos):
                        self.pos += 2
                        out.append(src[start : self.pos])
                        return True
                    break
                if c in "()":
                    depth += 1 if c == "(" else -1
                elif self._part([]):
                    continue
                self.pos += 1
        if self.aborted:
            return True
        self.not_arith.add(start)
        del self.found.commands[marks[0] :], self.found.hazards[marks[1] :]
        self.pos = start
        return False

    def _ansi(self, out: list[str]) -> None:
        """``$'...'`` with C escapes decoded, so ``$'\\x72m'`` is seen as ``rm``."""
        src, i = self.src, self.pos + 2
        while i < len(src) and src[i] != "'":
            i += 2 if src[i] == "\\" else 1
        out.append(_ANSI.sub(_ansi_escape, src[self.pos + 2 : min(i, len(src))]))
        self.pos = i + 1
        if i >= len(src):
            self._fail("unparsable: unterminated quote")


def _ansi_escape(match: re.Match[str]) -> str:
    esc = match.group(1)
    if esc[0] in "xuU" and len(esc) > 1:
        code = int(esc[1:], 16)
    elif esc[0] in "01234567":
        code = int(esc, 8) & 0xFF
    elif esc[0] == "c" and len(esc) > 1:
        code = ord(esc[1]) & 0x1F
    else:
        return _ANSI_CHARS.get(esc, esc)
    return chr(code) if code <= 0x10FFFF else match.group(0)
