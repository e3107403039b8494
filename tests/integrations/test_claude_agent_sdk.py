"""tapgate.integrations.claude_agent_sdk: the permission callback and the PreToolUse hook.

The SDK drives the Claude Code CLI, which cannot run here (it needs an
account and the network), so the tests call the callback and the hook
exactly as the SDK's control-protocol handler does, with the SDK's own types
(``ToolPermissionContext``, the ``PreToolUse`` hook input dict, a
``HookContext``), and read the answer the SDK would send to the CLI.
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

from tests.integrations import require

require("claude_agent_sdk")

from claude_agent_sdk import (
    HookContext,
    HookJSONOutput,
    PermissionResultAllow,
    PermissionResultDeny,
    PreToolUseHookInput,
    ToolPermissionContext,
)

from tapgate.client import RemoteGate, SyncRemoteGate
from tapgate.integrations.claude_agent_sdk import can_use_tool, pre_tool_use_hook
from tapgate.server.keys import GATE
from tests.client.test_client import Served
from tests.server.test_api import CI

CONTEXT = ToolPermissionContext(tool_use_id="toolu_01")
HOOK_CONTEXT: HookContext = {"signal": None}


def pre_tool_use(tool: str, **tool_input: Any) -> PreToolUseHookInput:
    """A PreToolUse hook input as the CLI sends it."""
    return {
        "session_id": "claude-session-1",
        "transcript_path": "/tmp/transcript.jsonl",
        "cwd": "/work",
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": dict(tool_input),
        "tool_use_id": "toolu_01",
    }


def verdict(output: HookJSONOutput) -> object:
    """The ``permissionDecision`` of a hook's answer."""
    specific = cast(dict[str, object], dict(output).get("hookSpecificOutput", {}))
    return specific.get("permissionDecision")


async def test_the_callback_allows_what_the_policy_allows(served: Served) -> None:
    decide = can_use_tool(RemoteGate(served.url, CI))
    assert isinstance(await decide("read_file", {"path": "a"}, CONTEXT), PermissionResultAllow)


async def test_the_callback_waits_for_an_approver_then_allows(served: Served) -> None:
    async with RemoteGate(served.url, CI, long_poll=0.2) as gate:
        asking = asyncio.ensure_future(can_use_tool(gate)("deploy", {"env": "prod"}, CONTEXT))
        await served.decide("approve")
        assert isinstance(await asyncio.wait_for(asking, 10), PermissionResultAllow)


async def test_the_callback_denies_with_the_approvers_reason(served: Served) -> None:
    with SyncRemoteGate(served.url, CI, long_poll=0.2) as gate:
        decide = can_use_tool(gate, session="chat-1")
        asking = asyncio.ensure_future(decide("deploy", {"env": "prod"}, CONTEXT))
        await served.decide("deny", reason="not during the freeze")
        result = await asyncio.wait_for(asking, 10)
    assert isinstance(result, PermissionResultDeny) and not result.interrupt
    assert result.message == "tapgate: denied by alice: not during the freeze"


async def test_the_hook_allows_what_the_policy_allows(served: Served) -> None:
    hook = pre_tool_use_hook(RemoteGate(served.url, CI))
    output = await hook(pre_tool_use("read_file", path="a"), "toolu_01", HOOK_CONTEXT)
    assert verdict(output) == "allow"


async def test_the_hook_waits_for_an_approver_in_the_claude_session(served: Served) -> None:
    hook = pre_tool_use_hook(RemoteGate(served.url, CI, long_poll=0.2))
    asking = asyncio.ensure_future(
        hook(pre_tool_use("deploy", env="prod"), "toolu_01", HOOK_CONTEXT)
    )
    request = await served.app[GATE].get_request(await served.pending())
    assert request.session == "claude-session-1"
    await served.decide("approve")
    output = await asyncio.wait_for(asking, 10)
    assert verdict(output) == "allow"


async def test_the_hook_denies_with_the_reason_for_claude(served: Served) -> None:
    hook = pre_tool_use_hook(RemoteGate(served.url, CI, long_poll=0.2))
    asking = asyncio.ensure_future(
        hook(pre_tool_use("deploy", env="prod"), "toolu_01", HOOK_CONTEXT)
    )
    await served.decide("deny", reason="use the pipeline")
    output = await asyncio.wait_for(asking, 10)
    assert dict(output).get("hookSpecificOutput") == {
        "hookEventName": "PreToolUse",
        "permissionDecision": "deny",
        "permissionDecisionReason": "tapgate: denied by alice: use the pipeline",
    }
