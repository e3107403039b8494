"""LangChain / LangGraph: tapgate answers the human-in-the-loop middleware's interrupts.

LangChain's ``HumanInTheLoopMiddleware`` pauses an agent (a LangGraph
``interrupt``) before each tool named in its ``interrupt_on``, and the run
continues with ``Command(resume=...)``. tapgate stands in for the human:
:func:`decide_interrupts` asks tapgate for every action of the pending
interrupts (both of the middleware's modes: ``batched``, one ``HITLRequest``
per model turn, and ``per_call``, one ``ToolApprovalRequest`` per call) and
returns the resume map, keyed by interrupt id: ``approve``, or ``reject``
with tapgate's reason as the message, which the middleware hands to the
model as the tool's error result. :func:`ainvoke_gated` runs a graph and
keeps resuming it until no such interrupt is left.

The middleware's ``edit`` and ``respond`` answers are never given: tapgate's
decision is allow or deny. Interrupts that are not the middleware's are left
out of the map, for the caller to answer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

try:
    from langchain.agents.middleware.human_in_the_loop import (
        ActionRequest,
        ApproveDecision,
        HITLResponse,
        RejectDecision,
    )
    from langchain_core.runnables import RunnableConfig
    from langgraph.pregel import Pregel
    from langgraph.types import Command, GraphOutput, Interrupt
except ModuleNotFoundError as exc:  # pragma: no cover - only without the extra
    raise ImportError(
        "tapgate.integrations.langgraph needs LangChain and LangGraph: "
        "pip install 'tapgate[integrations]'"
    ) from exc

from tapgate.core.models import Decision, ToolCall
from tapgate.integrations._decide import Checker, ask, refusal

__all__ = ["ainvoke_gated", "decide_interrupts"]

Answer = ApproveDecision | RejectDecision
"""What tapgate answers for one action."""


async def decide_interrupts(
    gate: Checker, interrupts: Sequence[Interrupt], *, session: str | None = None
) -> dict[str, HITLResponse | Answer]:
    """The ``Command(resume=...)`` map that answers every HITL interrupt in ``interrupts``.

    All the actions are asked at once, so several approvers can decide in
    parallel; a batched interrupt's decisions keep its actions' order, as
    the middleware matches them by position.
    """
    pending = [(i, acts) for i in interrupts if (acts := _actions(i.value)) is not None]
    decided = await asyncio.gather(*(_decide(gate, acts, session) for _, acts in pending))
    resume: dict[str, HITLResponse | Answer] = {}
    for (interrupt, _), answers in zip(pending, decided, strict=True):
        per_call = interrupt.value.get("type") == "tool_approval"
        resume[interrupt.id] = answers[0] if per_call else HITLResponse(decisions=list(answers))
    return resume


async def ainvoke_gated(
    graph: Pregel[Any, Any, Any, Any],
    graph_input: Any,
    config: RunnableConfig,
    *,
    gate: Checker,
    session: str | None = None,
) -> GraphOutput[Any]:
    """Run ``graph`` to the end, tapgate answering each HITL interrupt on the way.

    ``config`` must name a ``thread_id`` (the middleware needs a
    checkpointer); it is also the tapgate session unless ``session`` is
    given, so "allow for this session" means this conversation. Returns the
    last output: one with ``interrupts`` left only if some were not the
    middleware's.
    """
    if session is None:
        thread = config.get("configurable", {}).get("thread_id")
        session = None if thread is None else str(thread)
    output: GraphOutput[Any] = await graph.ainvoke(graph_input, config, version="v2")
    while output.interrupts:
        resume = await decide_interrupts(gate, output.interrupts, session=session)
        if not resume:
            break
        output = await graph.ainvoke(Command(resume=resume), config, version="v2")
    return output


def _actions(value: object) -> list[ActionRequest] | None:
    """The actions an interrupt asks about, or ``None`` if it is not the middleware's."""
    if not isinstance(value, Mapping):
        return None
    if value.get("type") == "tool_approval":
        return [ActionRequest(name=value["name"], args=value["args"])]
    requests = value.get("action_requests")
    return list(requests) if isinstance(requests, list) else None


async def _decide(gate: Checker, actions: list[ActionRequest], session: str | None) -> list[Answer]:
    calls = [ToolCall(tool=a["name"], arguments=a["args"], session=session) for a in actions]
    return [_answer(d) for d in await asyncio.gather(*(ask(gate, c) for c in calls))]


def _answer(decision: Decision) -> Answer:
    if decision.allowed:
        return ApproveDecision(type="approve")
    return RejectDecision(type="reject", message=refusal(decision))
