"""An approver's edit through every adapter: applied where the framework can, refused where not.

The real server (``tests.client.test_client.served``); the edit is made by
:func:`tapgate.decisions.edits.approve_edit` as alice, the one core path the Slack
modal's submission takes (``tests/channels/slack/test_edit.py`` covers the modal).
"""

from __future__ import annotations

import asyncio
from typing import Any

from tests.integrations import require

require("pydantic_ai")
require("claude_agent_sdk")
require("agents")
require("langgraph")

from claude_agent_sdk import PermissionResultAllow
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain.agents.middleware.human_in_the_loop import DecisionType, InterruptOnConfig
from langchain_core.messages import ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from pydantic_ai import Agent
from pydantic_ai.tools import DeferredToolRequests, ToolApproved

from tapgate.client import RemoteGate
from tapgate.decisions.edits import approve_edit
from tapgate.decisions.taps import Tap
from tapgate.integrations.claude_agent_sdk import can_use_tool, pre_tool_use_hook
from tapgate.integrations.langgraph import ainvoke_gated
from tapgate.integrations.openai_agents import run_gated
from tapgate.integrations.pydantic_ai import ApprovalToolset, resolve_deferred
from tapgate.server.keys import GATE
from tests.client.test_client import Served
from tests.integrations import test_langgraph as lg
from tests.integrations import test_openai_agents as oa
from tests.integrations import test_pydantic_ai as pa
from tests.integrations.test_claude_agent_sdk import CONTEXT, HOOK_CONTEXT, pre_tool_use
from tests.server.test_api import CI


async def edit(served: Served, **changes: Any) -> None:
    """Alice edits the one pending call and approves it, as the Slack modal does."""
    gate = served.app[GATE]
    request = await gate.get_request(await served.pending())
    tap = Tap(channel="slack", user_id="U0ALICE", action="approve", request_id=request.id)
    outcome = await approve_edit(gate, tap, {**request.arguments, **changes})
    assert outcome.applied, outcome.message


async def test_pydantic_ai_runs_the_edited_call(served: Served) -> None:
    ran: list[str] = []
    async with RemoteGate(served.url, CI, long_poll=0.2) as gate:
        agent = Agent(
            pa.calls_then_reports("deploy", env="prod"),
            toolsets=[ApprovalToolset(pa.tools(ran), gate)],
        )
        run = asyncio.create_task(agent.run("ship it"))
        await edit(served, env="staging")
        result = await asyncio.wait_for(run, 10)
    assert ran == ["deploy staging"] and result.output == "tool said: deployed staging"


async def test_pydantic_ai_deferred_approval_overrides_the_arguments(served: Served) -> None:
    ran: list[str] = []
    agent = pa.deferred_agent(ran)
    first = await agent.run("ship it")
    assert isinstance(first.output, DeferredToolRequests)
    resolving = asyncio.create_task(resolve_deferred(RemoteGate(served.url, CI), first.output))
    await edit(served, env="staging")
    results = await asyncio.wait_for(resolving, 10)
    [approval] = results.approvals.values()
    assert isinstance(approval, ToolApproved) and approval.override_args == {"env": "staging"}
    second = await agent.run(message_history=first.all_messages(), deferred_tool_results=results)
    assert ran == ["staging"] and second.output == "tool said: deployed staging"


async def test_the_claude_agent_sdk_gets_the_updated_input(served: Served) -> None:
    gate = RemoteGate(served.url, CI, long_poll=0.2)
    asking = asyncio.ensure_future(can_use_tool(gate)("deploy", {"env": "prod"}, CONTEXT))
    await edit(served, env="staging")
    result = await asyncio.wait_for(asking, 10)
    assert isinstance(result, PermissionResultAllow)
    assert result.updated_input == {"env": "staging"}

    hook = pre_tool_use_hook(gate)
    asking_hook = asyncio.ensure_future(
        hook(pre_tool_use("deploy", env="prod"), "toolu_01", HOOK_CONTEXT)
    )
    await edit(served, env="qa")
    output: Any = await asyncio.wait_for(asking_hook, 10)
    specific = output["hookSpecificOutput"]
    assert specific["permissionDecision"] == "allow"
    assert specific["updatedInput"] == {"env": "qa"}
    await gate.aclose()


async def test_the_openai_agents_sdk_refuses_an_edit_it_cannot_apply(served: Served) -> None:
    ran: list[str] = []
    ops = oa.agent(oa.CallsThenReports("deploy", env="prod"), ran)
    async with RemoteGate(served.url, CI, long_poll=0.2) as gate:
        run = asyncio.create_task(run_gated(ops, "ship it", gate=gate, run_config=oa.OFFLINE))
        await edit(served, env="staging")
        result = await asyncio.wait_for(run, 10)
    assert ran == []  # neither the original nor the edit ran
    assert "only with edited arguments" in result.final_output
    assert "the call was not run" in result.final_output


def hitl_agent(ran: list[str], allowed: list[DecisionType]) -> Any:
    tools, model = lg.tools_and_model("deploy", ran, env="prod")
    configs: dict[str, bool | InterruptOnConfig] = {
        t.name: InterruptOnConfig(allowed_decisions=allowed) for t in tools
    }
    middleware = HumanInTheLoopMiddleware(interrupt_on=configs)
    return create_agent(model, tools=tools, middleware=[middleware], checkpointer=InMemorySaver())


async def test_langgraph_answers_an_edit_decision_where_the_tool_allows_one(
    served: Served,
) -> None:
    cases: list[tuple[list[DecisionType], list[str]]] = [
        (["approve", "edit", "reject"], ["deploy staging"]),
        (["approve", "reject"], []),
    ]
    for allowed, ran_expected in cases:
        ran: list[str] = []
        agent = hitl_agent(ran, allowed)
        async with RemoteGate(served.url, CI, long_poll=0.2) as gate:
            run = asyncio.create_task(
                ainvoke_gated(agent, lg.USER, lg.config(f"t-{len(allowed)}"), gate=gate)
            )
            await edit(served, env="staging")
            output = await asyncio.wait_for(run, 10)
        assert ran == ran_expected
        [result] = [m for m in output.value["messages"] if isinstance(m, ToolMessage)]
        if not ran_expected:
            assert "only with edited arguments" in str(result.content)
