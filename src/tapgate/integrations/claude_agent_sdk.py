"""Claude Agent SDK: tapgate as the ``can_use_tool`` callback and as a ``PreToolUse`` hook.

The SDK asks its host before Claude Code runs a tool in two ways, and both
are served by the same decision:

- :func:`can_use_tool` builds a ``ClaudeAgentOptions(can_use_tool=...)``
  callback: ``PermissionResultAllow()``, or ``PermissionResultDeny(message=reason)``,
  which Claude reads as why the tool did not run. Claude Code calls it only
  for calls its own permission rules would prompt for.
- :func:`pre_tool_use_hook` builds a ``HookMatcher(hooks=[...])`` callback
  for ``PreToolUse``, run before every matching call: ``permissionDecision``
  ``allow`` or ``deny`` with ``permissionDecisionReason``, the same answer
  as ``tapgate hook claude-code`` gives as a command. Its session is the
  hook input's ``session_id``, so "allow for this session" means this
  Claude Code session.

An approver's edit runs: ``PermissionResultAllow(updated_input=...)`` and
the hook's ``updatedInput`` hand Claude Code the edited input.

Tool names and arguments are Claude Code's (``Bash`` and ``{"command": ...}``,
``mcp__server__tool``), as in the command hook, so one policy serves both.
"""

from __future__ import annotations

from typing import Any

try:
    from claude_agent_sdk import (
        CanUseTool,
        HookCallback,
        HookContext,
        HookInput,
        HookJSONOutput,
        PermissionResult,
        PermissionResultAllow,
        PermissionResultDeny,
        PreToolUseHookSpecificOutput,
        ToolPermissionContext,
    )
except ModuleNotFoundError as exc:  # pragma: no cover - only without the extra
    raise ImportError(
        "tapgate.integrations.claude_agent_sdk needs the Claude Agent SDK: "
        "pip install 'tapgate[integrations]'"
    ) from exc

from tapgate.gate.models import ToolCall
from tapgate.integrations._decide import Checker, ask, edited, refusal

__all__ = ["can_use_tool", "pre_tool_use_hook"]


def can_use_tool(gate: Checker, *, session: str | None = None) -> CanUseTool:
    """A ``can_use_tool`` callback that lets a tool run only when ``gate`` allows it."""

    async def decide(
        tool_name: str, tool_input: dict[str, Any], context: ToolPermissionContext
    ) -> PermissionResult:
        call = ToolCall(tool=tool_name, arguments=tool_input, session=session)
        decision = await ask(gate, call)
        if decision.allowed:
            arguments = edited(decision)
            return PermissionResultAllow(
                updated_input=None if arguments is None else dict(arguments)
            )
        return PermissionResultDeny(message=refusal(decision))

    return decide


def pre_tool_use_hook(gate: Checker) -> HookCallback:
    """A ``PreToolUse`` hook callback that allows or denies each call as ``gate`` decides.

    Registered for another event by mistake, it answers ``{}`` (no opinion)
    rather than guess what a decision would mean there.
    """

    async def hook(
        hook_input: HookInput, tool_use_id: str | None, context: HookContext
    ) -> HookJSONOutput:
        if hook_input["hook_event_name"] != "PreToolUse":
            return {}
        call = ToolCall(
            tool=hook_input["tool_name"],
            arguments=hook_input["tool_input"],
            session=hook_input["session_id"],
        )
        decision = await ask(gate, call)
        reason = decision.reason if decision.allowed else refusal(decision)
        output: PreToolUseHookSpecificOutput = {
            "hookEventName": "PreToolUse",
            "permissionDecision": "allow" if decision.allowed else "deny",
            "permissionDecisionReason": reason,
        }
        arguments = edited(decision)
        if arguments is not None:
            output["updatedInput"] = dict(arguments)
        return {"hookSpecificOutput": output}

    return hook
