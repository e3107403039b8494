"""tapgate.integrations.openai_agents: needs_approval tools decided by tapgate, the real server.

The model is a scripted ``agents.models.interface.Model`` (as the SDK's own
tests do): it calls a tool, then answers with what the tool's output said.
No network, no API key; tracing is off for every run.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from tests.integrations import require

require("agents")

from agents import Agent, RunConfig, Runner, function_tool
from agents.items import ModelResponse, TResponseInputItem, TResponseStreamEvent
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from tapgate.client import RemoteGate, SyncRemoteGate
from tapgate.integrations.openai_agents import decide_interruptions, run_gated
from tapgate.server.keys import GATE
from tests.client.test_client import Served
from tests.server.test_api import CI

OFFLINE = RunConfig(tracing_disabled=True)


class CallsThenReports(Model):
    """Calls ``tool`` with ``args`` once, then answers with the tool's output it was given."""

    def __init__(self, tool: str, **args: Any) -> None:
        self.tool = tool
        self.args = args

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        *a: Any,
        **k: Any,
    ) -> ModelResponse:
        items: list[Any] = input if isinstance(input, list) else []
        outputs = [
            item["output"]
            for item in items
            if isinstance(item, dict) and item.get("type") == "function_call_output"
        ]
        if not outputs:
            call = ResponseFunctionToolCall(
                type="function_call",
                call_id="call-1",
                name=self.tool,
                arguments=json.dumps(self.args),
            )
            return ModelResponse(output=[call], usage=Usage(), response_id=None)
        text = ResponseOutputText(
            type="output_text", text=f"tool said: {outputs[-1]}", annotations=[]
        )
        message = ResponseOutputMessage(
            id="msg-1", type="message", role="assistant", status="completed", content=[text]
        )
        return ModelResponse(output=[message], usage=Usage(), response_id=None)

    def stream_response(self, *a: Any, **k: Any) -> AsyncIterator[TResponseStreamEvent]:
        raise NotImplementedError("these tests do not stream")


def agent(model: Model, ran: list[str]) -> Agent[Any]:
    """Both tools need approval: the policy allows ``read_file`` and asks for ``deploy``."""

    @function_tool(needs_approval=True)
    def read_file(path: str) -> str:
        """Read a file."""
        ran.append(f"read {path}")
        return f"contents of {path}"

    @function_tool(needs_approval=True)
    def deploy(env: str) -> str:
        """Deploy to an environment."""
        ran.append(f"deploy {env}")
        return f"deployed {env}"

    return Agent(name="ops", model=model, tools=[read_file, deploy])


async def test_a_call_the_policy_allows_is_approved_at_once(served: Served) -> None:
    ran: list[str] = []
    gate = RemoteGate(served.url, CI)
    ops = agent(CallsThenReports("read_file", path="a"), ran)
    result = await run_gated(ops, "read it", gate=gate, run_config=OFFLINE)
    assert ran == ["read a"] and result.final_output == "tool said: contents of a"
    assert await served.app[GATE].store.list_requests() == []  # nobody was asked


async def test_an_asked_tool_runs_once_an_approver_approves(served: Served) -> None:
    ran: list[str] = []
    ops = agent(CallsThenReports("deploy", env="prod"), ran)
    async with RemoteGate(served.url, CI, long_poll=0.2) as gate:
        run = asyncio.create_task(run_gated(ops, "ship it", gate=gate, run_config=OFFLINE))
        await served.decide("approve")
        result = await asyncio.wait_for(run, 10)
    assert ran == ["deploy prod"] and result.final_output == "tool said: deployed prod"


async def test_a_rejection_reaches_the_model_with_the_reason(served: Served) -> None:
    """Step by step: run, decide the interruptions on the state, resume with it."""
    ran: list[str] = []
    ops = agent(CallsThenReports("deploy", env="prod"), ran)
    first = await Runner.run(ops, "ship it", run_config=OFFLINE)
    assert [item.tool_name for item in first.interruptions] == ["deploy"]
    with SyncRemoteGate(served.url, CI, long_poll=0.2) as gate:
        deciding = asyncio.create_task(decide_interruptions(gate, first, session="chat-1"))
        await served.decide("deny", reason="not during the freeze")
        state = await asyncio.wait_for(deciding, 10)
    result = await Runner.run(ops, state, run_config=OFFLINE)
    assert ran == []
    assert result.final_output == "tool said: tapgate: denied by alice: not during the freeze"
