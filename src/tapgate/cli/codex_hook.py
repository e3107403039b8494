"""``tapgate hook codex``: Codex's ``PermissionRequest`` hook, and the config that runs it.

The hook's flags and its answer within its time limit are the Claude Code
hook's (:func:`tapgate.cli.agent.answer_hook`); what differs is the
answer's translation (:func:`tapgate.client._codex_hook.codex_output`) and
what ``--print-command`` prints: not a command line alone but the
``hooks.json`` document Codex reads (``~/.codex/hooks.json``, or a
project's ``.codex/hooks.json``), holding the fast command line.
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import sys
from collections.abc import Sequence
from typing import Any

from tapgate.cli.agent import HOOK_GRACE, answer_hook

__all__ = ["STATUS_MESSAGE", "codex_hooks_json", "hook_codex"]

STATUS_MESSAGE = "Asking tapgate"
"""What Codex shows while the hook runs."""
_MARGIN = 30
"""Seconds Codex's own hook timeout leaves past the hook's last possible answer."""


def hook_codex(args: argparse.Namespace) -> int:
    """``tapgate hook codex``: answer one Codex hook call, within its time limit, exit 0."""
    from tapgate.client._codex_hook import codex_hook, codex_output

    if args.print_command:
        document = codex_hooks_json(getattr(args, "command_line", []), args.timeout)
        print(json.dumps(document, indent=2))
        return 0
    return answer_hook(args, codex_hook, codex_output)


def codex_hooks_json(command_line: Sequence[str], timeout: float) -> dict[str, Any]:
    """Codex's ``hooks.json`` running the fast path with the flags of ``command_line``.

    Codex kills a hook past its ``timeout`` (600 s unless set) and then shows
    its own prompt; the hook answers by ``--timeout`` plus its grace, so
    Codex's limit is set just past that. No ``matcher``: every tool Codex
    asks about (``Bash``, ``NetworkAccess``, and what later versions add)
    reaches tapgate.
    """
    from tapgate.client._codex_hook import SCRIPT

    flags = [flag for flag in command_line[2:] if flag != "--print-command"]
    command = shlex.join([sys.executable, "-I", "-S", SCRIPT, *flags])
    limit = math.ceil(timeout + min(HOOK_GRACE, timeout)) + _MARGIN
    handler = {
        "type": "command",
        "command": command,
        "timeout": limit,
        "statusMessage": STATUS_MESSAGE,
    }
    return {"hooks": {"PermissionRequest": [{"hooks": [handler]}]}}
