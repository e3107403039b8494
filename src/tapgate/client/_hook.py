"""The Claude Code hook: Claude Code's hook JSON in, tapgate's decision out as hook JSON.

Claude Code runs a command hook with the event on stdin and reads a decision
from stdout. Two events can carry a permission decision, and both are served:

- ``PreToolUse`` runs before every matching tool call. Its answer is
  ``hookSpecificOutput.permissionDecision``: ``allow`` (skip Claude Code's
  prompt), ``deny`` (``permissionDecisionReason`` is shown to Claude) or
  ``ask`` (show Claude Code's own prompt, with the reason).
- ``PermissionRequest`` runs only when Claude Code is about to show its
  permission dialog. Its answer is ``hookSpecificOutput.decision`` with
  ``behavior`` ``allow`` or ``deny`` (``message`` tells Claude why). It has no
  "ask": a hook that wants the dialog to appear gives no decision, so that
  verdict is answered with only a ``systemMessage`` for the user.

An approver who edited the call before approving it answers ``allow`` with
the edited tool input as ``updatedInput`` (``hookSpecificOutput.updatedInput``
for ``PreToolUse``, ``decision.updatedInput`` for ``PermissionRequest``):
Claude Code runs the edited call, never the original.

(Shapes as in the Claude Agent SDK's ``PreToolUseHookSpecificOutput`` and
``PermissionRequestHookSpecificOutput``, anthropics/claude-agent-sdk-python.)

A hook that fails is worse than a hook that says no: this module never
raises. Unreadable input, a missing or refused token, an unreachable server
and a request nobody decided in time all become an explicit verdict chosen by
the operator (``on_error``, ``on_expired``; deny by default) whose reason says
what went wrong, so a broken gate never silently lets a call through.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal, cast

from tapgate.client._ask import decide, describe, failure
from tapgate.client._errors import ClientError
from tapgate.client._hook_answer import fallback as _fallback_answer
from tapgate.client._hook_answer import hook_output
from tapgate.client._lean import connect
from tapgate.client._retrying import DEFAULT_RETRY_FOR
from tapgate.gate.models import Decision, ToolCall

__all__ = [
    "HOOK_EVENTS",
    "HookEvent",
    "HookInput",
    "HookVerdict",
    "claude_code_hook",
    "hook_fallback",
    "hook_output",
    "hook_refusal",
    "parse_hook_input",
]

HookEvent = Literal["PreToolUse", "PermissionRequest"]
HookVerdict = Literal["allow", "deny", "ask"]
HOOK_EVENTS: tuple[HookEvent, ...] = ("PreToolUse", "PermissionRequest")
"""The events answered (``_fast_hook.HOOK_EVENTS``, held equal by a test)."""
_REFUSED_CALL = frozenset({400, 413, 422})
"""Statuses that refuse the call's content (which the model chose), not the server's health."""

DEFAULT_HOOK_TIMEOUT = 300.0
"""Seconds the hook waits for a human: half of Claude Code's default command-hook timeout."""


@dataclass(frozen=True, kw_only=True, slots=True)
class HookInput:
    """The part of Claude Code's hook input that tapgate decides on."""

    event: HookEvent
    tool: str
    arguments: dict[str, Any]
    session: str | None


class _BadInput(ValueError):
    """The hook input is not what Claude Code sends."""


def parse_hook_input(raw: str) -> HookInput:
    """The hook input in ``raw``; ``ValueError`` names the first thing that is wrong.

    Only the fields a decision needs are checked; Claude Code adds fields over
    time (``permission_mode``, ``agent_id``...) and they are ignored.
    """
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError) as exc:  # absurd nesting is the model's to send
        raise _BadInput(f"stdin is not JSON ({type(exc).__name__})") from None
    if not isinstance(body, dict):
        raise _BadInput("stdin is not a JSON object")
    event = body.get("hook_event_name")
    if event not in HOOK_EVENTS:
        raise _BadInput(f"hook_event_name {event!r} is not PreToolUse or PermissionRequest")
    tool = body.get("tool_name")
    if not isinstance(tool, str) or not tool:
        raise _BadInput("tool_name is missing or not a string")
    arguments = body.get("tool_input", {})
    if not isinstance(arguments, dict):
        raise _BadInput("tool_input is not a JSON object")
    session = body.get("session_id")
    return HookInput(
        event=cast(HookEvent, event),
        tool=tool,
        arguments=arguments,
        session=session if isinstance(session, str) and session else None,
    )


def claude_code_hook(
    raw: str,
    *,
    url: str,
    token: str | None,
    on_error: HookVerdict = "deny",
    on_expired: Literal["deny", "ask"] = "deny",
    timeout: float = DEFAULT_HOOK_TIMEOUT,
    retry_for: float = DEFAULT_RETRY_FOR,
    submitted: tuple[bytes, tuple[str, str] | None] | None = None,
) -> dict[str, Any]:
    """Decide the tool call in the hook input ``raw`` with the tapgate server at ``url``.

    The call sent is exactly Claude Code's: ``tool_name`` as the tool,
    ``tool_input`` as the arguments and ``session_id`` as the session, so the
    operator's policy names Claude Code's tools (``Bash``, ``Edit``,
    ``mcp__github__create_issue``) and "allow for this session" means this
    Claude Code session. The agent is whoever ``token`` belongs to.

    ``timeout`` bounds the wait for a human; the request is then withdrawn
    and, like a request that expired on the server, answered with
    ``on_expired``. A server that fails or goes away (a restart) is retried
    for ``retry_for`` seconds, within ``timeout`` and the request's own
    deadline; the wait re-attaches to its request by id. Everything that
    prevents a decision is answered with ``on_error``. Returns the hook's
    JSON output; never raises.

    ``submitted``: what the fast path (:mod:`._fast_hook`) got back for the
    submit it already sent for this very input, read here as this hook's own
    submit's answer, so the call is never sent twice.
    """
    event = _event_of(raw)
    try:
        hook = parse_hook_input(raw)
    except (ValueError, RecursionError) as exc:
        # The model shapes tool_input: an input made unreadable on purpose must
        # not reach --on-error, which an operator may have set to allow.
        return hook_output(event, "deny", f"tapgate: could not read the hook input: {exc}; denied")
    if not token:
        problem = "no agent token (set TAPGATE_AGENT_TOKEN, or the variable --token-env names)"
        return _fallback(event, on_error, problem, "--on-error")
    call = ToolCall(tool=hook.tool, arguments=hook.arguments, session=hook.session)
    try:
        window = min(retry_for, timeout)
        with connect(url, token, retry_for=window, submitted=submitted) as gate:
            decision = decide(gate, call, timeout=timeout)
    except Exception as exc:  # a hook must answer, whatever went wrong
        return _failed(event, on_error, url, exc)
    if decision is None:
        problem = f"nobody decided within {timeout:g}s, so tapgate withdrew the request"
        return _fallback(event, on_expired, problem, "--on-expired")
    if decision.status == "expired" and not decision.allowed:
        problem = f"request {decision.request_id} expired: {decision.reason}"
        return _fallback(event, on_expired, problem, "--on-expired")
    edited = decision.arguments if decision.edited else None
    return hook_output(event, decision.verdict, _reason(decision), edited)


def hook_refusal(raw: str, problem: str) -> dict[str, Any]:
    """A deny for the hook input ``raw`` when the hook cannot even start (a bad command line).

    The command line is in Claude Code's settings, where an operator reads a
    reason more easily than an exit status; a deny keeps the gate closed.
    """
    return hook_output(_event_of(raw), "deny", f"tapgate: {problem}; denied")


def hook_fallback(raw: str, verdict: HookVerdict, problem: str, flag: str) -> dict[str, Any]:
    """The answer named by ``flag`` (``--on-error``) for the hook input ``raw``."""
    return _fallback(_event_of(raw), verdict, problem, flag)


def _event_of(raw: str) -> HookEvent:
    """The event to answer, even for input that fails to parse (PreToolUse if unknown)."""
    try:
        event = json.loads(raw).get("hook_event_name")
    except (ValueError, AttributeError, RecursionError):
        return "PreToolUse"
    return cast(HookEvent, event) if event in HOOK_EVENTS else "PreToolUse"


def _failed(event: HookEvent, on_error: HookVerdict, url: str, exc: Exception) -> dict[str, Any]:
    """``--on-error``'s answer, unless the server refused the call's own content.

    A call refused as too large, too deep or invalid (400, 413, 422) has
    content the model chose: it is denied, so that no input can be shaped
    into ``--on-error allow``.
    """
    if isinstance(exc, ClientError) and exc.status in _REFUSED_CALL:
        return hook_output(event, "deny", f"tapgate: {failure(url, exc)}; denied")
    return _fallback(event, on_error, failure(url, exc), "--on-error")


def _fallback(event: HookEvent, verdict: HookVerdict, problem: str, flag: str) -> dict[str, Any]:
    return _fallback_answer(event, verdict, problem, flag)


def _reason(decision: Decision) -> str:
    return f"tapgate: {describe(decision)}"
