"""tapgate.integrations.langgraph: LangChain's HITL middleware answered by tapgate, the real server.

The model is LangChain's GenericFakeChatModel, scripted to call a tool and
then to answer with what the tool's result said; the graph keeps its state
in LangGraph's InMemorySaver between the interrupt and the resume.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from tests.integrations import require

require("langgraph")
require("langchain")

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain.agents.middleware.human_in_the_loop import InterruptMode
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from tapgate.client import RemoteGate, SyncRemoteGate
from tapgate.integrations.langgraph import ainvoke_gated, decide_interrupts
from tests.client.test_client import Served
from tests.server.test_api import CI


class ToolCallingFake(GenericFakeChatModel):
    """GenericFakeChatModel that accepts tools: it answers from its script whatever is bound."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ToolCallingFake:
        return self


def tools_and_model(
    name: str, ran: list[str], **args: Any
) -> tuple[list[BaseTool], ToolCallingFake]:
    """Two tools that record their runs, and a model that calls ``name`` once, then finishes."""

    @tool
    def read_file(path: str) -> str:
        """Read a file."""
        ran.append(f"read {path}")
        return f"contents of {path}"

    @tool
    def deploy(env: str) -> str:
        """Deploy to an environment."""
        ran.append(f"deploy {env}")
        return f"deployed {env}"

    model = ToolCallingFake(
        messages=iter(
            [
                AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": "call-1"}]),
                AIMessage(content="finished"),
            ]
        )
    )
    return [read_file, deploy], model


def build(name: str, ran: list[str], mode: InterruptMode = "batched", **args: Any) -> Any:
    """The agent, every tool going through the HITL middleware, state in an InMemorySaver."""
    tools, model = tools_and_model(name, ran, **args)
    middleware = HumanInTheLoopMiddleware(
        interrupt_on={t.name: True for t in tools}, interrupt_mode=mode
    )
    return create_agent(model, tools=tools, middleware=[middleware], checkpointer=InMemorySaver())


def config(thread: str = "thread-1") -> RunnableConfig:
    return {"configurable": {"thread_id": thread}}


def tool_results(messages: list[BaseMessage]) -> list[ToolMessage]:
    return [m for m in messages if isinstance(m, ToolMessage)]


USER = {"messages": [{"role": "user", "content": "go"}]}


async def test_an_allowed_call_is_approved_at_once(served: Served) -> None:
    ran: list[str] = []
    agent = build("read_file", ran, path="a")
    output = await ainvoke_gated(agent, USER, config(), gate=RemoteGate(served.url, CI))
    assert ran == ["read a"] and not output.interrupts
    assert tool_results(output.value["messages"])[0].content == "contents of a"


@pytest.mark.parametrize("mode", ["batched", "per_call"])
async def test_an_asked_call_runs_once_an_approver_approves(
    served: Served, mode: InterruptMode
) -> None:
    ran: list[str] = []
    agent = build("deploy", ran, mode, env="prod")
    async with RemoteGate(served.url, CI, long_poll=0.2) as gate:
        run = asyncio.create_task(ainvoke_gated(agent, USER, config(), gate=gate))
        await served.decide("approve")
        output = await asyncio.wait_for(run, 10)
    assert ran == ["deploy prod"]
    assert output.value["messages"][-1].content == "finished"
    assert tool_results(output.value["messages"])[0].content == "deployed prod"


@pytest.mark.parametrize("mode", ["batched", "per_call"])
async def test_a_rejection_reaches_the_model_with_the_reason(
    served: Served, mode: InterruptMode
) -> None:
    """Step by step, as a caller driving the graph itself would: invoke, decide, resume."""
    ran: list[str] = []
    agent = build("deploy", ran, mode, env="prod")
    first = await agent.ainvoke(USER, config(), version="v2")
    assert len(first.interrupts) == 1 and ran == []
    with SyncRemoteGate(served.url, CI, long_poll=0.2) as gate:
        deciding = asyncio.create_task(decide_interrupts(gate, first.interrupts))
        await served.decide("deny", reason="not during the freeze")
        resume = await asyncio.wait_for(deciding, 10)
    output = await agent.ainvoke(Command(resume=resume), config(), version="v2")
    assert ran == []
    [result] = tool_results(output.value["messages"])
    assert result.status == "error"
    assert "tapgate: denied by alice: not during the freeze" in str(result.content)
