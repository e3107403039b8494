"""``tapgate hook claude-code`` tried first by the fast path, in this process, before argparse.

The console script has already paid for its start-up (``site``, pip's
``import re``), but the full hook's own imports (``argparse``, the client's
plans and records, ``dataclasses``, ``typing``) are ~50 ms more on every tool
call. So a call the server decides at once is answered here by
:func:`tapgate.client._fast_hook.fast_answer`, the code the fast command
runs; anything else goes on to the full hook with the input read here and,
once the call was sent, ``--submitted`` what came back (never sent twice).

The hook input is read once per command; :func:`hook_input` is the one
reader, so the full hook and its refusals read what this module read.
"""

from __future__ import annotations

import sys

__all__ = ["first_try", "forget_input", "hook_input"]

_read: list[str] = []
"""The hook input once read (at most one item): stdin is read once per command."""


def first_try(argv: list[str]) -> list[str] | None:
    """``None`` when the fast path answered; else the command line for the full hook."""
    from tapgate.client import _codex_hook, _fast_hook

    flags = argv[2:]
    try:
        _fast_hook.read_flags(flags)
    except Exception:  # a flag the fast path does not vouch for: the parser answers
        return argv
    raw = hook_input()
    fast_answer = _codex_hook.fast_answer if argv[1] == "codex" else _fast_hook.fast_answer
    try:
        answer = fast_answer(flags, raw.encode())
    except _fast_hook.HandOff as handed:
        return [*argv, "--submitted", handed.args[0]] if handed.args else argv
    except Exception:  # any surprise is the full hook's to answer
        return argv
    sys.stdout.write(answer)
    sys.stdout.flush()
    return None


def hook_input(*, interactive: bool = True) -> str:
    """Claude Code's hook input; a terminal is read only where a person means to type it."""
    if _read:
        return _read[0]
    try:
        if not interactive and sys.stdin.isatty():
            return ""
        text = sys.stdin.read()
    except (OSError, UnicodeDecodeError, ValueError):
        text = ""  # answered as unreadable input, like any other malformed hook input
    _read.append(text)
    return text


def forget_input() -> None:
    """A new command reads its own input (``main`` runs many times in one test process)."""
    _read.clear()
