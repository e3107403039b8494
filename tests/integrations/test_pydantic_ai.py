"""tapgate.integrations.pydantic_ai: PydanticAI's FunctionModel / TestModel, the real server."""

from __future__ import annotations

import asyncio

from tests.integrations import require

require("pydantic_ai")

from pydantic_ai import Agent
from pydantic_ai.capabilities import HandleDeferredToolCalls
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel
from pydantic_ai.tools import DeferredToolRequests
from pydantic_ai.toolsets import FunctionToolset

from tapgate.client import RemoteGate, SyncRemoteGate
from tapgate.integrations.pydantic_ai import (
    ApprovalToolset,
    deferred_handler,
    resolve_deferred,
)
from tests.client.test_client import Served
from tests.server.test_api import CI


def tools(ran: list[str]) -> FunctionToolset[None]:
    """The agent's tools; ``ran`` records what actually ran."""
    toolset: FunctionToolset[None] = FunctionToolset()

    @toolset.tool_plain
    def read_file(path: str) -> str:
        ran.append(f"read {path}")
        return f"contents of {path}"

    @toolset.tool_plain
    def deploy(env: str) -> str:
        ran.append(f"deploy {env}")
        return f"deployed {env}"

    return toolset


def calls_then_reports(tool: str, **args: object) -> FunctionModel:
    """A model that calls ``tool`` once, then answers with what the tool's result said."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        results = [
            part
            for message in messages
            if isinstance(message, ModelRequest)
            for part in message.parts
            if isinstance(part, ToolReturnPart)
        ]
        if not results:
            return ModelResponse(parts=[ToolCallPart(tool, dict(args))])
        return ModelResponse(parts=[TextPart(f"tool said: {results[-1].model_response_str()}")])

    return FunctionModel(respond)


async def test_an_allowed_tool_runs_at_once(served: Served) -> None:
    ran: list[str] = []
    async with RemoteGate(served.url, CI) as gate:
        agent = Agent(
            TestModel(call_tools=["read_file"]), toolsets=[ApprovalToolset(tools(ran), gate)]
        )
        result = await agent.run("read it")
    assert ran == ["read a"]
    assert "contents of a" in result.output


async def test_an_asked_tool_runs_once_an_approver_approves(served: Served) -> None:
    ran: list[str] = []
    async with RemoteGate(served.url, CI, long_poll=0.2) as gate:
        toolset = ApprovalToolset(tools(ran), gate, session="conversation-1")
        agent = Agent(calls_then_reports("deploy", env="prod"), toolsets=[toolset])
        run = asyncio.create_task(agent.run("ship it"))
        await served.decide("approve")
        result = await asyncio.wait_for(run, 10)
    assert ran == ["deploy prod"]
    assert result.output == "tool said: deployed prod"


async def test_a_denial_reaches_the_model_with_the_approvers_reason(served: Served) -> None:
    ran: list[str] = []
    with SyncRemoteGate(served.url, CI, long_poll=0.2) as gate:  # a sync gate works as well
        agent = Agent(
            calls_then_reports("deploy", env="prod"), toolsets=[ApprovalToolset(tools(ran), gate)]
        )
        run = asyncio.create_task(agent.run("ship it"))
        await served.decide("deny", reason="not during the freeze")
        result = await asyncio.wait_for(run, 10)
    assert ran == []
    assert "tapgate: denied by alice: not during the freeze" in result.output


async def test_a_policy_denial_never_asks_anyone(served: Served) -> None:
    ran: list[str] = []
    toolset: FunctionToolset[None] = FunctionToolset()

    @toolset.tool_plain
    def drop_db(name: str) -> str:
        ran.append(name)
        return "dropped"

    gate = RemoteGate(served.url, CI)
    agent = Agent(
        calls_then_reports("drop_db", name="prod"), toolsets=[ApprovalToolset(toolset, gate)]
    )
    result = await agent.run("drop it")
    assert ran == []
    assert "destructive" in result.output


def deferred_agent(ran: list[str]) -> Agent[None, str | DeferredToolRequests]:
    """An agent whose ``deploy`` needs approval: the run ends with DeferredToolRequests."""
    agent: Agent[None, str | DeferredToolRequests] = Agent(
        calls_then_reports("deploy", env="prod"), output_type=[str, DeferredToolRequests]
    )

    @agent.tool_plain(requires_approval=True)
    def deploy(env: str) -> str:
        ran.append(env)
        return f"deployed {env}"

    return agent


async def test_deferred_approvals_resolved_by_tapgate_resume_the_run(served: Served) -> None:
    ran: list[str] = []
    agent = deferred_agent(ran)
    first = await agent.run("ship it")
    assert isinstance(first.output, DeferredToolRequests) and ran == []
    async with RemoteGate(served.url, CI, long_poll=0.2) as gate:
        resolving = asyncio.create_task(resolve_deferred(gate, first.output))
        await served.decide("approve")
        results = await asyncio.wait_for(resolving, 10)
    assert list(results.answered_by.values()) == ["alice"]
    second = await agent.run(message_history=first.all_messages(), deferred_tool_results=results)
    assert ran == ["prod"] and second.output == "tool said: deployed prod"


async def test_a_deferred_denial_carries_the_reason_to_the_model(served: Served) -> None:
    ran: list[str] = []
    agent = deferred_agent(ran)
    first = await agent.run("ship it")
    assert isinstance(first.output, DeferredToolRequests)
    resolving = asyncio.create_task(resolve_deferred(RemoteGate(served.url, CI), first.output))
    await served.decide("deny", reason="use the pipeline")
    results = await asyncio.wait_for(resolving, 10)
    second = await agent.run(message_history=first.all_messages(), deferred_tool_results=results)
    assert ran == []
    assert "tapgate: denied by alice: use the pipeline" in str(second.output)


async def test_the_handler_capability_decides_inside_one_run(served: Served) -> None:
    ran: list[str] = []
    agent = deferred_agent(ran)
    handler = HandleDeferredToolCalls(handler=deferred_handler(RemoteGate(served.url, CI)))
    run = asyncio.create_task(agent.run("ship it", capabilities=[handler]))
    await served.decide("approve")
    result = await asyncio.wait_for(run, 10)
    assert ran == ["prod"] and result.output == "tool said: deployed prod"
