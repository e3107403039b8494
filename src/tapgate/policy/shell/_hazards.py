"""The hazard rules: what one simple command really runs, and why it cannot be auto-allowed.

The lexer finds the words of each simple command; this module decides what
those words mean for the policy. It drops ``VAR=value`` assignments (flagging
``PATH``/``LD_PRELOAD``-style ones), sees through wrappers like ``sudo`` and
``timeout`` so deny rules reach the wrapped command, and hands the texts that
the shell would parse again (``bash -c``, ``eval``, ``trap``, ``watch``) back to
the lexer through ``reparse``. The rules never look at characters, only at
words, so they do not depend on which lexer produced them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from tapgate.policy.shell._model import (
    CONTROL,
    MAX_DEPTH,
    STOP,
    STRIP,
    Findings,
    SimpleCommand,
    Word,
)

__all__ = ["Reparse", "judge"]

Reparse = Callable[[str], None]
"""Parse a text the shell would parse again, into the same :class:`Findings`."""

_ASSIGN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?=")
_RISKY_ENV = re.compile(  # variables that change which code runs: PATH, LD_PRELOAD, ...
    r"(?:(?:LD_|DYLD_|XDG_|GIT_CONFIG|GIT_SSH|BASH_FUNC_)\w*|\w*(?:PATH|PRELOAD|COMMAND|PAGER"
    r"|EDITOR|ASKPASS|OPTIONS|OPT|STARTUP)|BASH_ENV|ENV|IFS|PS4|SHELLOPTS|BASHOPTS|VISUAL"
    r"|LESSOPEN|HOME|GIT_DIR|GIT_EXTERNAL_DIFF)(?:\[[^\]]*\])?\+?="
)
_ENV_HAZARD = "sets PATH, LD_PRELOAD or a similar variable"
_DECLARE = frozenset({"export", "declare", "typeset", "local", "readonly"})
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


def judge(words: Sequence[Word], found: Findings, reparse: Reparse) -> None:
    """Drop assignments and reserved words, then record what is left as a command."""
    i = 0
    while i < len(words):
        raw = words[i][1]
        if _ASSIGN.match(raw):
            _check_env((raw,), found)
            i += 1
            continue
        if raw not in STRIP and raw not in STOP and raw != "function":
            break
        found.hazard(CONTROL)
        if raw in STOP:
            return
        i += 2 if raw == "function" else 1
    if i < len(words):
        _inspect(tuple(value for value, _ in words[i:]), found, reparse)


def _inspect(argv: tuple[str, ...], found: Findings, reparse: Reparse) -> None:
    """Record ``argv`` and, through wrappers like ``sudo``, the command it runs."""
    for _ in range(MAX_DEPTH):
        found.commands.append(SimpleCommand(argv))
        name = argv[0].rsplit("/", 1)[-1]
        inner = _unwrap(name, argv[1:]) if name in _WRAPPERS else ()
        if name in _WRAPPERS:
            _check_env(argv[1 : len(argv) - len(inner)], found)
        if name == "watch" and inner:  # watch joins its arguments and runs sh -c
            reparse(" ".join(inner))
            return
        if not inner:
            _command_itself(argv, name, found, reparse)
            return
        argv = inner
    found.hazard("unparsable: nesting too deep")


def _command_itself(argv: tuple[str, ...], name: str, found: Findings, reparse: Reparse) -> None:
    """Hazards of the command itself: a hidden name, a nested shell, eval, sourcing."""
    if argv[0] != "[" and any(c in argv[0] for c in "$`{*?["):  # $CMD, {rm,-rf,/}, r?
        found.hazard("command name from an expansion")
    if name in _DECLARE:
        _check_env(argv[1:], found)
    script = _shell_script(argv[1:]) if name in _SHELLS else None
    if script:
        found.hazard(f"nested shell ({name} -c)")
        reparse(script)
    elif script is not None:
        found.hazard(f"nested shell ({name} reading stdin)")
    elif name == "eval":
        found.hazard("eval")
        reparse(" ".join(argv[1:]))
    elif name == "trap" and len(argv) > 2:
        found.hazard("trap")
        reparse(argv[1])
    elif name in ("source", "."):
        found.hazard("sources a script")


def _check_env(words: tuple[str, ...], found: Findings) -> None:
    if any(_RISKY_ENV.match(word) for word in words):
        found.hazard(_ENV_HAZARD)


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
