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

An approver who edited the call before approving it is answered with the
middleware's ``edit`` decision (the same tool, the edited arguments) where
the interrupt allows ``edit`` for that tool; where it does not, ``reject``
says why, because approving would run the call as the model sent it.
``respond`` is never given. Interrupts that are not the middleware's are
left out of the map, for the caller to answer.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from typing import Any

try:
    from langchain.agents.middleware.human_in_the_loop import (
        ActionRequest,
        ApproveDecision,
        EditDecision,
        HITLResponse,
        RejectDecision,
    )
    from langchain_core.runnables import RunnableConfig
    from langgraph.pregel import Pregel
    from langgraph.types import Command, GraphOutput, Interrupt
    from pydantic import TypeAdapter
except ModuleNotFoundError as exc:  # pragma: no cover - only without the extra
    raise ImportError(
        "tapgate.integrations.langgraph needs LangChain and LangGraph: "
        "pip install 'tapgate[integrations]'"
    ) from exc

from tapgate.gate.models import Decision, ToolCall
from tapgate.integrations._decide import Checker, ask, edited, refusal, unappliable

__all__ = ["ainvoke_gated", "decide_interrupts"]

Answer = ApproveDecision | EditDecision | RejectDecision
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
    decided = await asyncio.gather(*(_decide(gate, i, acts, session) for i, acts in pending))
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


async def _decide(
    gate: Checker, interrupt: Interrupt, actions: list[ActionRequest], session: str | None
) -> list[Answer]:
    calls = [ToolCall(tool=a["name"], arguments=a["args"], session=session) for a in actions]
    decisions = await asyncio.gather(*(ask(gate, c) for c in calls))
    return [_answer(interrupt, a, d) for a, d in zip(actions, decisions, strict=True)]


def _answer(interrupt: Interrupt, action: ActionRequest, decision: Decision) -> Answer:
    arguments = edited(decision)
    if arguments is not None:
        if not _may_edit(interrupt, action["name"]):
            return RejectDecision(type="reject", message=unappliable(decision, "this interrupt"))
        return EditDecision(
            type="edit", edited_action={"name": action["name"], "args": dict(arguments)}
        )
    if decision.allowed:
        return ApproveDecision(type="approve")
    return RejectDecision(type="reject", message=refusal(decision))


def _may_edit(interrupt: Interrupt, name: str) -> bool:
    """Does the middleware accept an ``edit`` answer for tool ``name`` in this interrupt?

    Batched: its ``review_configs``; per call: the interrupt's ``response_schema``.
    """
    value = interrupt.value
    configs = value.get("review_configs") if isinstance(value, Mapping) else None
    if isinstance(configs, list):
        return any(
            isinstance(c, Mapping)
            and c.get("action_name") == name
            and "edit" in (c.get("allowed_decisions") or ())
            for c in configs
        )
    schema = getattr(interrupt, "response_schema", None)
    if schema is None:
        return False
    if not isinstance(schema, dict):
        try:
            schema = TypeAdapter(schema).json_schema()
        except Exception:  # a schema we cannot read: no edit rather than a wrong one
            return False
    return '"edit"' in json.dumps(schema, default=str)
