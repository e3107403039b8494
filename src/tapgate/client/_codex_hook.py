"""The Codex hook: Codex's ``PermissionRequest`` hook JSON in, tapgate's decision out.

Codex runs a ``PermissionRequest`` command hook where it would show its own
approval prompt, with the event on stdin, and reads a decision from stdout
(checked against openai/codex's own source, ``codex-rs/hooks``: the
generated ``permission-request.command.{input,output}.schema.json``,
``events/permission_request.rs`` and ``engine/output_parser.rs``):

- input: ``session_id``, ``turn_id``, ``cwd``, ``model``, ``permission_mode``,
  ``transcript_path``, ``hook_event_name: "PermissionRequest"``,
  ``tool_name`` (``Bash``, ``NetworkAccess``...) and ``tool_input``
  (``{"command", "description"}`` for a shell command);
- output: ``{"hookSpecificOutput": {"hookEventName": "PermissionRequest",
  "decision": {"behavior": "allow" | "deny", "message": ...}}}``. Any
  hook's deny wins. No decision (empty output, or only a
  ``systemMessage``) shows Codex's own prompt, and so does an output Codex
  cannot read or refuses: ``updatedInput``, ``updatedPermissions``,
  ``interrupt``, ``continue: false``, a non-zero exit.

That answer is the Claude Code hook's ``PermissionRequest`` answer, so both
paths of this hook (this file run as ``python -I -S``, and the full hook)
are the Claude Code hook's, translated by :func:`codex_output` where Codex
differs: it refuses ``updatedInput``, so an approval an approver edited
cannot run as edited, and a refused output would fall back to the local
prompt, where someone may approve the *unedited* call. It is denied instead,
its message carrying the edited call for the model to issue again. Every
answer has ``PermissionRequest``'s shape, whatever the input was, because
an output of another event's shape is one Codex cannot read (a local
prompt, not a deny).

Like :mod:`._fast_hook`, this module imports only built-in modules at
import, so it runs as a file; the full hook is imported where it is used.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

SCRIPT = os.path.abspath(__file__)
"""This file: what ``tapgate hook codex --print-command`` asks ``python -I -S`` to run."""

if TYPE_CHECKING or __package__:  # imported as tapgate.client._codex_hook
    from tapgate.client import _fast_hook as fast
    from tapgate.client import _hook_answer as answers
else:  # run as a file (python -I -S): the fast path and the answers are beside it
    sys.path.insert(0, os.path.dirname(SCRIPT))
    import _fast_hook as fast
    import _hook_answer as answers

    del sys.path[0]

EVENT = "PermissionRequest"
HOOK = "codex"
"""``tapgate hook codex``: what a call this file does not answer is handed to."""
EDITED = (
    "tapgate: approved with an edit, which a Codex hook cannot apply (Codex refuses a "
    "PermissionRequest hook's updatedInput), so this call is denied; the approved call "
    "is {edited}"
)


def codex_output(answer: dict[str, Any]) -> dict[str, Any]:
    """The Claude Code hook's ``answer`` as Codex reads it: ``PermissionRequest``'s shape.

    An allow with an edit becomes a deny naming the edited call; a
    ``PreToolUse``-shaped answer (to input whose event could not be read)
    becomes the same verdict in ``PermissionRequest``'s shape.
    """
    output = answer.get("hookSpecificOutput")
    if not isinstance(output, dict):
        return answer  # only a systemMessage: no decision, Codex asks in its own prompt
    if output.get("hookEventName") == "PreToolUse":
        verdict, reason = output["permissionDecision"], output["permissionDecisionReason"]
        return answers.hook_output(EVENT, verdict, reason)
    decision = output["decision"]
    if "updatedInput" in decision:
        edited = fast._dumps(decision["updatedInput"], compact=True)
        return answers.hook_output(EVENT, "deny", EDITED.format(edited=edited))
    return answer


def fast_answer(argv: Sequence[str], raw: bytes) -> str:
    """Codex's stdout for a call decided at once; ``HandOff`` for anything else."""
    body = fast._loads(raw.decode())
    if not isinstance(body, dict) or body.get("hook_event_name") != EVENT:
        raise fast.HandOff  # the full hook says what is wrong
    answer = fast._loads(fast.fast_answer(argv, raw))
    return fast._dumps(codex_output(answer), compact=False) + "\n"


def codex_hook(raw: str, **options: Any) -> dict[str, Any]:
    """The full hook: decide the call in ``raw`` as ``claude_code_hook`` decides it, for Codex.

    ``options`` are :func:`tapgate.client._hook.claude_code_hook`'s. Input
    of any event but ``PermissionRequest`` is a misconfigured hook (Codex's
    other events read other answers): it is denied, saying so.
    """
    from tapgate.client._hook import claude_code_hook

    event = _event_of(raw)
    if event is not None and event != EVENT:
        problem = f"tapgate hook codex answers Codex's PermissionRequest event, not {event!r}"
        return answers.hook_output(EVENT, "deny", f"tapgate: {problem}; denied")
    return codex_output(claude_code_hook(raw, **options))


def _event_of(raw: str) -> object:
    """The input's ``hook_event_name``, or ``None`` where the input cannot be read."""
    try:
        body = fast._loads(raw)
    except fast.HandOff:
        return None
    return body.get("hook_event_name") if isinstance(body, dict) else None


def main(argv: Sequence[str] | None = None) -> int:
    """Answer one Codex hook call from this file, or hand it to the full hook; exit 0."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        raw = sys.stdin.buffer.read()
    except (OSError, ValueError):
        raw = b""
    try:
        answer = fast_answer(argv, raw)
    except fast.HandOff as handed:
        return fast._hand_off(argv, raw, handed.args[0] if handed.args else None, HOOK)
    except Exception:  # any surprise is the full hook's to answer, never a crash here
        return fast._hand_off(argv, raw, None, HOOK)
    sys.stdout.write(answer)
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
