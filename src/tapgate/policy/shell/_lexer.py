"""The hand-written lexer: one left-to-right pass that finds the simple commands of a line.

It owns the characters: quoting, escapes, ``$(...)``, backticks, ``${...}``,
``$((...))``, ``$'...'``, redirections, here-documents, subshells, ``case``
patterns and ``[[ ... ]]``. It flags the hazards it can see in the characters
(substitutions, redirections to files, here-documents, control structures,
input it cannot parse) and hands the words of every simple command to the
hazard rules (:mod:`tapgate.policy.shell._hazards`), which call back into it for
texts the shell would parse again.

Hand-written rather than a grammar library because it must never raise, must
stay roughly linear on hostile input, and must fail closed on anything it does
not fully understand; tree-sitter-bash was measured against it (docs/policy.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tapgate.policy.shell._hazards import judge
from tapgate.policy.shell._model import CONTROL, MAX_DEPTH, STRIP, Findings, Word
from tapgate.policy.shell._words import WordReader

__all__ = ["Lexer"]

_REDIRECTS = ("&>>", "<<<", "<<-", "&>", "<<", "<>", "<&", ">&", ">>", ">|", "<", ">")


@dataclass(slots=True)
class _Frame:
    """The simple command being built at one nesting level."""

    words: list[Word] = field(default_factory=list)  # (value, source text)
    lead: bool = True  # only reserved words so far, so ``[[`` would start a test
    cond: bool = False  # inside [[ ... ]], where && < > ( ) are operands
    cases: int = 0  # open ``case`` statements: a ``)`` ends a pattern


class Lexer(WordReader):
    """One left-to-right pass over one text; nested texts get a lexer of their own."""

    def __init__(self, src: str, found: Findings, depth: int) -> None:
        super().__init__(src, found, depth)
        self.heredocs: list[tuple[str, bool, bool]] = []  # (delimiter, strip tabs, expand)

    def run(self) -> None:
        """Parse the whole text, recording into the shared :class:`Findings`."""
        self._list(closer=False)

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
