"""OpenAI Agents SDK: tapgate approves or rejects the run's tool-approval interruptions.

A tool declared with ``needs_approval`` makes ``Runner.run`` stop with
``result.interruptions`` (``ToolApprovalItem`` s). :func:`decide_interruptions`
asks tapgate for each, all at once, and records the answers on the run's
state: ``state.approve(item)``, or ``state.reject(item, rejection_message=reason)``,
whose message is what the model reads as the tool's output when the run
resumes. :func:`run_gated` runs an agent and keeps resuming it until nothing
waits for approval.

The SDK's approval carries no arguments, so an approver's edit cannot be
applied: an edited approval is rejected with a message saying so (the model
may call the tool again as edited), never approved as the model sent it.

The tool name tapgate sees is the SDK's (``item.tool_name``), the arguments
the call's JSON arguments (anything but a JSON object is sent as
``{"input": ...}``, as tapgate's arguments are a mapping).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

try:
    from agents import Agent, Runner, RunResult, RunResultStreaming, RunState, ToolApprovalItem
except ModuleNotFoundError as exc:  # pragma: no cover - only without the extra
    raise ImportError(
        "tapgate.integrations.openai_agents needs the OpenAI Agents SDK: "
        "pip install 'tapgate[integrations]'"
    ) from exc

from tapgate.gate.models import ToolCall
from tapgate.integrations._decide import Checker, ask, edited, refusal, unappliable

__all__ = ["decide_interruptions", "run_gated"]


async def decide_interruptions(
    gate: Checker, result: RunResult | RunResultStreaming, *, session: str | None = None
) -> RunState[Any]:
    """The run's state with every interruption approved or rejected by tapgate: resume with it."""
    state = result.to_state()
    items = list(result.interruptions)
    decisions = await asyncio.gather(*(ask(gate, _call(item, session)) for item in items))
    for item, decision in zip(items, decisions, strict=True):
        if decision.allowed and edited(decision) is not None:
            state.reject(item, rejection_message=unappliable(decision, "the Agents SDK"))
        elif decision.allowed:
            state.approve(item)
        else:
            state.reject(item, rejection_message=refusal(decision))
    return state


async def run_gated(
    agent: Agent[Any],
    run_input: str | list[Any],
    *,
    gate: Checker,
    session: str | None = None,
    **run_options: Any,
) -> RunResult:
    """``Runner.run(agent, run_input, **run_options)``, tapgate deciding every approval on the way.

    ``run_options`` are passed to every ``Runner.run`` (``context``,
    ``run_config``, ``max_turns``...). ``session`` is tapgate's session, for
    "allow for this session" grants.
    """
    result = await Runner.run(agent, run_input, **run_options)
    while result.interruptions:
        state = await decide_interruptions(gate, result, session=session)
        result = await Runner.run(agent, state, **run_options)
    return result


def _call(item: ToolApprovalItem, session: str | None) -> ToolCall:
    raw = item.arguments
    try:
        arguments = json.loads(raw) if raw else {}
    except json.JSONDecodeError:
        arguments = raw
    if not isinstance(arguments, dict):
        arguments = {"input": arguments}
    return ToolCall(
        tool=item.tool_name or item.name or "unknown", arguments=arguments, session=session
    )
