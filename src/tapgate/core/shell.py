"""Shell command lines, split into the simple commands they would run.

The policy judges a shell tool call command by command (design decision 2):
``git status && rm -rf /`` is two commands, and a rule allowing ``git *`` must
not allow the second. A glob over the whole string cannot see that, and neither
:mod:`shlex` (it does not know ``$(``) nor a regex finds commands hidden in
substitutions, subshells, ``bash -c '...'``, ``eval`` or wrappers like ``sudo``.

This module owns that hand-written lexer. It is conservative by design: it never
raises, stays roughly linear on any input, and names as a *hazard* every
construct whose effect it cannot fully see (substitutions, redirections to
files, here-documents, nested shells, control structures, input it cannot
parse). A line with hazards is never auto-allowed; its commands are still
returned, so deny rules apply to them all the same.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

__all__ = ["ShellParse", "SimpleCommand", "parse"]

_MAX_DEPTH = 20
_CONTROL = "shell control structure"
_META = frozenset(" \t\n;&|()<>")
_PLAIN = re.compile(r"[^ \t\n;&|()<>'\"\\$`]+")
_DQ_PLAIN = re.compile(r'[^"\\$`]+')
_ASSIGN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?=")
_RISKY_ENV = re.compile(  # variables that change which code runs: PATH, LD_PRELOAD, ...
    r"(?:(?:LD_|DYLD_|XDG_|GIT_CONFIG|GIT_SSH|BASH_FUNC_)\w*|\w*(?:PATH|PRELOAD|COMMAND|PAGER"
    r"|EDITOR|ASKPASS|OPTIONS|OPT|STARTUP)|BASH_ENV|ENV|IFS|PS4|SHELLOPTS|BASHOPTS|VISUAL"
    r"|LESSOPEN|HOME|GIT_DIR|GIT_EXTERNAL_DIFF)(?:\[[^\]]*\])?\+?="
)
_ENV_HAZARD = "sets PATH, LD_PRELOAD or a similar variable"
_DECLARE = frozenset({"export", "declare", "typeset", "local", "readonly"})
_ANSI = re.compile(
    r"\\(x[0-9A-Fa-f]{1,2}|[0-7]{1,3}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}|c.|.)", re.S
)
_ANSI_CHARS = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b"}
_REDIRECTS = ("&>>", "<<<", "<<-", "&>", "<<", "<>", "<&", ">&", ">>", ">|", "<", ">")
_STRIP = frozenset({"if", "then", "elif", "else", "do", "while", "until", "!", "{", "coproc"})
_STOP = frozenset({"for", "case", "select", "done", "fi", "esac", "}", "[[", "]]", "in"})
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "ash", "mksh", "fish", "csh", "tcsh"})
_WRAPPERS: dict[str, frozenset[str]] = {  # wrapper -> its options that take a separate value
    "sudo": frozenset({"-u", "-g", "-C", "-D", "-h", "-p", "-R", "-r", "-T", "-t", "-U"}),
    "doas": frozenset({"-u", "-C"}),
    "env": frozenset({"-u", "-C"}),
    "nohup": frozenset(),
    "time": frozenset({"-f", "-o"}),
    "nice": frozenset({"-n"}),
    "ionice": frozenset({"-c", "-n", "-p", "-P", "-u"}),
    "timeout": frozenset({"-k", "-s"}),
    "command": frozenset(),
    "builtin": frozenset(),
    "exec": frozenset({"-a"}),
    "xargs": frozenset({"-a", "-d", "-E", "-I", "-L", "-n", "-P", "-s"}),
    "stdbuf": frozenset({"-i", "-o", "-e"}),
    "strace": frozenset({"-a", "-b", "-e", "-E", "-I", "-o", "-O", "-p", "-P", "-s", "-S", "-u"}),
    "watch": frozenset({"-n"}),
}


@dataclass(frozen=True, slots=True)
class SimpleCommand:
    """One command the line would run: the unit that rule globs are matched against.

    ``words`` have quotes removed, escapes resolved and leading ``VAR=value``
    assignments dropped; substitutions stay as their source text (``$(date)``).
    """

    words: tuple[str, ...]

    @property
    def text(self) -> str:
        """The words joined by single spaces, so ``rm  -rf '/'`` matches ``rm -rf /``."""
        return " ".join(self.words)


@dataclass(frozen=True, slots=True)
class ShellParse:
    """Every simple command of a line, in order, and why it must not be auto-allowed.

    ``commands`` includes commands nested in substitutions, subshells, nested
    shells and wrappers, so deny rules see them; ``hazards`` are short reasons,
    de-duplicated, in the order first found.
    """

    commands: tuple[SimpleCommand, ...]
    hazards: tuple[str, ...]

    @property
    def safe(self) -> bool:
        """No hazards: the commands are all the line would run, so rules may allow it."""
        return not self.hazards


def parse(command: str) -> ShellParse:
    """Split ``command`` into simple commands and hazards; never raises (it is model output)."""
    result = _Result(budget=4 * len(command) + 65536)
    try:
        _Parser(command, result, 0).run()
    except Exception:  # fail closed: a parser bug must not crash the gate or allow the line
        result.hazard("unparsable: internal parser error")
    return ShellParse(tuple(result.commands), tuple(result.hazards))


@dataclass(slots=True)
class _Result:
    budget: int  # characters that re-parsed texts (eval, bash -c, ...) may still take
    commands: list[SimpleCommand] = field(default_factory=list)
    hazards: list[str] = field(default_factory=list)

    def hazard(self, reason: str) -> None:
        if reason not in self.hazards:
            self.hazards.append(reason)


@dataclass(slots=True)
class _Frame:
    """The simple command being built at one nesting level."""

    words: list[tuple[str, str]] = field(default_factory=list)  # (value, source text)
    lead: bool = True  # only reserved words so far, so ``[[`` would start a test
    cond: bool = False  # inside [[ ... ]], where && < > ( ) are operands
    cases: int = 0  # open ``case`` statements: a ``)`` ends a pattern


class _Parser:
    """One left-to-right pass over one text; nested texts get a parser of their own."""

    def __init__(self, src: str, result: _Result, depth: int) -> None:
        self.src, self.result, self.depth = src, result, depth
        self.pos = 0
        self.aborted = False
        self.heredocs: list[tuple[str, bool, bool]] = []  # (delimiter, strip tabs, expand)
        self.not_arith: set[int] = set()

    def run(self) -> None:
        self._list(closer=False)

    def _fail(self, reason: str) -> None:
        """Stop this text at the first reason it cannot be parsed."""
        if not self.aborted:
            self.result.hazard(reason)
        self.aborted = True
        self.pos = len(self.src)

    @contextmanager
    def _level(self) -> Iterator[bool]:
        if self.depth >= _MAX_DEPTH:
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
        self.result.budget -= len(text)
        if self.depth >= _MAX_DEPTH or self.result.budget < 0:
            self.result.hazard("unparsable: nesting too deep")
            return
        inner = _Parser(text, self.result, self.depth + 1)
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
                self.result.hazard(_CONTROL)
                frame.words.clear()
                self.pos += 1
            else:
                self._end(frame)
                self.pos += 1
                if closer:
                    return True
                self.result.hazard("unparsable: unbalanced parenthesis")
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
            self.result.hazard(_CONTROL)
            return
        if len(words) == 1 or (len(words) == 2 and first == "function"):
            after = self.pos + 1
            while src[after : after + 1] in (" ", "\t"):
                after += 1
            if src.startswith(")", after):
                self.result.hazard(_CONTROL)
                words.clear()
                self.pos = after + 1
                return
        if words:
            self.result.hazard("unparsable: unexpected parenthesis")
            self._end(frame)
        self.pos += 1
        self._nested("unbalanced parenthesis")

    def _end(self, frame: _Frame) -> None:
        first = frame.words[0][1] if frame.words else ""
        if first == "case":
            frame.cases += 1
        elif first == "esac" and frame.cases:
            frame.cases -= 1
        self._emit(frame.words)
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
        frame.lead = frame.lead and raw in _STRIP
        frame.words.append((value, raw))

    # --- redirections ----------------------------------------------------------------

    def _redirect(self, frame: _Frame) -> None:
        src = self.src
        op = next((o for o in _REDIRECTS if src.startswith(o, self.pos)), src[self.pos])
        self.pos += len(op)
        while src[self.pos : self.pos + 1] in (" ", "\t"):
            self.pos += 1
        if not self._at_word():
            self.result.hazard("unparsable: redirection without a target")
            return
        value, raw = self._word()
        dup = op == ">&" and (value == "-" or (value.isascii() and value.rstrip("-").isdigit()))
        if op in ("<<", "<<-"):
            self.result.hazard("here-document")
            self.heredocs.append((value, op == "<<-", raw == value))
        elif not (dup or value == "/dev/null" or op in ("<", "<<<", "<&")):
            self.result.hazard("output redirection to a file")

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
        self.result.hazard(hazard)
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
        self.result.hazard("command substitution")
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
        marks = len(self.result.commands), len(self.result.hazards)
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
        del self.result.commands[marks[0] :], self.result.hazards[marks[1] :]
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

    # --- simple commands -------------------------------------------------------------

    def _emit(self, words: list[tuple[str, str]]) -> None:
        """Drop assignments and reserved words, then record what is left as a command."""
        i = 0
        while i < len(words):
            raw = words[i][1]
            if _ASSIGN.match(raw):
                self._check_env((raw,))
                i += 1
                continue
            if raw not in _STRIP and raw not in _STOP and raw != "function":
                break
            self.result.hazard(_CONTROL)
            if raw in _STOP:
                return
            i += 2 if raw == "function" else 1
        if i < len(words):
            self._inspect(tuple(value for value, _ in words[i:]))

    def _inspect(self, argv: tuple[str, ...]) -> None:
        """Record ``argv`` and, through wrappers like ``sudo``, the command it runs."""
        for _ in range(_MAX_DEPTH):
            self.result.commands.append(SimpleCommand(argv))
            name = argv[0].rsplit("/", 1)[-1]
            inner = _unwrap(name, argv[1:]) if name in _WRAPPERS else ()
            if name in _WRAPPERS:
                self._check_env(argv[1 : len(argv) - len(inner)])
            if name == "watch" and inner:  # watch joins its arguments and runs sh -c
                self._sub(" ".join(inner))
                return
            if not inner:
                self._judge(argv, name)
                return
            argv = inner
        self.result.hazard("unparsable: nesting too deep")

    def _judge(self, argv: tuple[str, ...], name: str) -> None:
        """Hazards of the command itself: a hidden name, a nested shell, eval, sourcing."""
        if argv[0] != "[" and any(c in argv[0] for c in "$`{*?["):  # $CMD, {rm,-rf,/}, r?
            self.result.hazard("command name from an expansion")
        if name in _DECLARE:
            self._check_env(argv[1:])
        script = _shell_script(argv[1:]) if name in _SHELLS else None
        if script:
            self.result.hazard(f"nested shell ({name} -c)")
            self._sub(script)
        elif script is not None:
            self.result.hazard(f"nested shell ({name} reading stdin)")
        elif name == "eval":
            self.result.hazard("eval")
            self._sub(" ".join(argv[1:]))
        elif name == "trap" and len(argv) > 2:
            self.result.hazard("trap")
            self._sub(argv[1])
        elif name in ("source", "."):
            self.result.hazard("sources a script")

    def _check_env(self, words: tuple[str, ...]) -> None:
        if any(_RISKY_ENV.match(word) for word in words):
            self.result.hazard(_ENV_HAZARD)


def _unwrap(name: str, args: tuple[str, ...]) -> tuple[str, ...]:
    """The command a wrapper runs: its arguments after its options (best effort)."""
    takes_value, i = _WRAPPERS[name], 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            i += 1
            break
        if arg in takes_value:
            i += 2
        elif arg.startswith("-") or _ASSIGN.match(arg):
            i += 1
        else:
            break
    if name == "timeout":
        i += 1  # the duration
    return args[i:]


def _shell_script(args: tuple[str, ...]) -> str | None:
    """The script of ``sh [options] -c SCRIPT``; "" if the shell reads stdin, None for a file."""
    has_c, has_s, i = False, False, 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            i += 1
            break
        if arg in ("-o", "+o", "-O", "+O"):
            i += 2
        elif arg.startswith(("-", "+")) and len(arg) > 1:
            short = arg[0] == "-" and not arg.startswith("--")
            has_c, has_s = has_c or (short and "c" in arg), has_s or (short and "s" in arg)
            i += 1
        else:
            break
    if has_c:
        return args[i] if i < len(args) else None
    return "" if has_s or i >= len(args) else None


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
