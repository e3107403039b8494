"""The hand-written lexer: one left-to-right pass that finds the simple commands of a line.

It owns the characters: quoting, escapes, ``$(...)``, backticks, ``${...}``,
``$((...))``, ``$'...'``, redirections, here-documents, subshells, ``case``
patterns and ``[[ ... ]]``. It flags the hazards it can see in the characters
(substitutions, redirections to files, here-documents, control structures,
input it cannot parse) and hands the words of every simple command to the
hazard rules (:mod:`tapgate.core.shell._hazards`), which call back into it for
texts the shell would parse again.

Hand-written rather than a grammar library because it must never raise, must
stay roughly linear on hostile input, and must fail closed on anything it does
not fully understand; tree-sitter-bash was measured against it (docs/policy.md).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from tapgate.core.shell._hazards import judge
from tapgate.core.shell._model import CONTROL, MAX_DEPTH, STRIP, Findings, Word

__all__ = ["Lexer"]

_META = frozenset(" \t\n;&|()<>")
_PLAIN = re.compile(r"[^ \t\n;&|()<>'\"\\$`]+")
_DQ_PLAIN = re.compile(r'[^"\\$`]+')
_ANSI = re.compile(
    r"\\(x[0-9A-Fa-f]{1,2}|[0-7]{1,3}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}|c.|.)", re.S
)
_ANSI_CHARS = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b"}
_REDIRECTS = ("&>>", "<<<", "<<-", "&>", "<<", "<>", "<&", ">&", ">>", ">|", "<", ">")


@dataclass(slots=True)
class _Frame:
    """The simple command being built at one nesting level."""

    words: list[Word] = field(default_factory=list)  # (value, source text)
    lead: bool = True  # only reserved words so far, so ``[[`` would start a test
    cond: bool = False  # inside [[ ... ]], where && < > ( ) are operands
    cases: int = 0  # open ``case`` statements: a ``)`` ends a pattern


class Lexer:
    """One left-to-right pass over one text; nested texts get a parser of their own."""

    def __init__(self, src: str, found: Findings, depth: int) -> None:
        self.src, self.found, self.depth = src, found, depth
        self.pos = 0
        self.aborted = False
        self.heredocs: list[tuple[str, bool, bool]] = []  # (delimiter, strip tabs, expand)
        self.not_arith: set[int] = set()

    def run(self) -> None:
        """Parse the whole text, recording into the shared :class:`Findings`."""
        self._list(closer=False)

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

    def _sub(self, text: str, *, heredoc: bool = False) -> None:
        """Parse a text that the shell would parse again (backticks, ``bash -c``, ``eval``)."""
        self.found.budget -= len(text)
        if self.depth >= MAX_DEPTH or self.found.budget < 0:
            self.found.hazard("unparsable: nesting too deep")
            return
        inner = Lexer(text, self.found, self.depth + 1)
        if heredoc:
            inner._dquote([], None)
        else:
            inner.run()

    def _nested(self, missing: str) -> None:
        with self._level() as ok:
            if ok and not self._list(closer=True):
                self._fail(f"unparsable: {missing}")

    # --- command lists -------------------------------------------------------------

    def _list(self, closer: bool) -> bool:
        """Parse commands up to the end, or up to the ``)`` closing this level (True)."""
        frame, src = _Frame(), self.src
        while self.pos < len(src):
            first = frame.words[0][1] if frame.words else ""
            if src[self.pos] != ")" or frame.cond:
                self._step(frame)
            elif first and first != "esac" and (frame.cases or first == "case"):
                frame.cases += first == "case"
                self.found.hazard(CONTROL)
                frame.words.clear()
                self.pos += 1
            else:
                self._end(frame)
                self.pos += 1
                if closer:
                    return True
                self.found.hazard("unparsable: unbalanced parenthesis")
        self._end(frame)
        return False

    def _step(self, frame: _Frame) -> None:
        src, pos = self.src, self.pos
        c, nxt = src[pos], src[pos + 1 : pos + 2]
        if c in " \t":
            self.pos += 1
        elif c == "\\" and nxt == "\n":
            self.pos += 2
        elif c == "#":
            end = src.find("\n", pos)
            self.pos = len(src) if end < 0 else end
        elif frame.cond and c in "&|<>()":
            while self.pos < len(src) and src[self.pos] in "&|<>()":
                self.pos += 1
            frame.words.append((src[pos : self.pos], src[pos : self.pos]))
        elif c in "<>" and nxt == "(":
            self._add_word(frame)
        elif c in "<>" or c + nxt == "&>":
            self._redirect(frame)
        elif c in "\n;&|":
            self.pos += 2 if c + nxt in ("&&", "||", "|&") else 1
            self._end(frame)
            if c == "\n" and self.heredocs:
                self._heredocs()
        elif c == "(":
            self._paren(frame)
        else:
            self._add_word(frame)

    def _paren(self, frame: _Frame) -> None:
        """``(`` starts a subshell, an arithmetic command, or ends ``name()`` of a function."""
        words, src = frame.words, self.src
        first = words[0][1] if words else ""
        arith = len(words) <= 1 and first in ("", "for") and src.startswith("((", self.pos)
        if arith and self._arith([], 2):
            self.found.hazard(CONTROL)
            return
        if len(words) == 1 or (len(words) == 2 and first == "function"):
            after = self.pos + 1
            while src[after : after + 1] in (" ", "\t"):
                after += 1
            if src.startswith(")", after):
                self.found.hazard(CONTROL)
                words.clear()
                self.pos = after + 1
                return
        if words:
            self.found.hazard("unparsable: unexpected parenthesis")
            self._end(frame)
        self.pos += 1
        self._nested("unbalanced parenthesis")

    def _end(self, frame: _Frame) -> None:
        first = frame.words[0][1] if frame.words else ""
        if first == "case":
            frame.cases += 1
        elif first == "esac" and frame.cases:
            frame.cases -= 1
        judge(frame.words, self.found, self._sub)
        frame.words, frame.lead, frame.cond = [], True, False

    def _add_word(self, frame: _Frame) -> None:
        value, raw = self._word()
        src, pos = self.src, self.pos
        fd = raw.isascii() and raw.isdigit() and src[pos : pos + 1] in ("<", ">")
        if fd and src[pos + 1 : pos + 2] != "(":
            self._redirect(frame)  # ``2>file``: the digits name a descriptor
            return
        if raw == "[[" and frame.lead:
            frame.cond = True
        elif raw == "]]":
            frame.cond = False
        frame.lead = frame.lead and raw in STRIP
        frame.words.append((value, raw))

    # --- redirections ----------------------------------------------------------------

    def _redirect(self, frame: _Frame) -> None:
        src = self.src
        op = next((o for o in _REDIRECTS if src.startswith(o, self.pos)), src[self.pos])
        self.pos += len(op)
        while src[self.pos : self.pos + 1] in (" ", "\t"):
            self.pos += 1
        if not self._at_word():
            self.found.hazard("unparsable: redirection without a target")
            return
        value, raw = self._word()
        dup = op == ">&" and (value == "-" or (value.isascii() and value.rstrip("-").isdigit()))
        if op in ("<<", "<<-"):
            self.found.hazard("here-document")
            self.heredocs.append((value, op == "<<-", raw == value))
        elif not (dup or value == "/dev/null" or op in ("<", "<<<", "<&")):
            self.found.hazard("output redirection to a file")

    def _heredocs(self) -> None:
        """Skip the bodies of the here-documents opened on the line just ended."""
        src, n = self.src, len(self.src)
        for delimiter, strip_tabs, expand in self.heredocs:
            start = end = self.pos
            while self.pos < n:
                newline = src.find("\n", self.pos)
                stop = n if newline < 0 else newline
                line = src[self.pos : stop]
                end, self.pos = self.pos, min(stop + 1, n)
                if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                    break
            else:
                end = n
            if expand:  # an unquoted delimiter: $( ) and backticks in the body run
                self._sub(src[start:end], heredoc=True)
        self.heredocs.clear()

    # --- words -----------------------------------------------------------------------

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
