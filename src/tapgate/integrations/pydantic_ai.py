"""PydanticAI: a toolset that asks tapgate before every tool runs, and a deferred-call resolver.

Two ways in, matching PydanticAI's two approval mechanisms:

- :class:`ApprovalToolset` wraps any toolset (a ``WrapperToolset``, like
  PydanticAI's own ``ApprovalRequiredToolset``): each call is decided by
  tapgate inline. A denial raises PydanticAI's ``ToolFailed`` with the
  reason, which the model reads as the tool's failed result (and, unlike
  ``ModelRetry``, it does not spend the tool's retry budget).
- :func:`resolve_deferred` answers the ``DeferredToolRequests`` a run ends
  with when tools raise ``ApprovalRequired`` (or are declared
  ``requires_approval=True``): each approval is asked of tapgate, all at
  once, and comes back as ``ToolApproved`` or ``ToolDenied(message=reason)``
  in a ``DeferredToolResults`` for the next run. :func:`deferred_handler`
  is the same as a handler for PydanticAI's ``HandleDeferredToolCalls``
  capability, which resolves them inside one run.

The tool name tapgate sees is PydanticAI's, the arguments the validated ones.
An approver's edit runs: the toolset calls the tool with the edited arguments
(validated again by the tool's own schema; a failure fails the tool, never
runs the original), and a deferred approval is ``ToolApproved(override_args=...)``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

try:
    from pydantic_ai.exceptions import ToolFailed
    from pydantic_ai.messages import ToolCallPart
    from pydantic_ai.tools import (
        AgentDepsT,
        DeferredToolRequests,
        DeferredToolResults,
        RunContext,
        ToolApproved,
        ToolDenied,
    )
    from pydantic_ai.toolsets import WrapperToolset
    from pydantic_ai.toolsets.abstract import ToolsetTool
except ModuleNotFoundError as exc:  # pragma: no cover - only without the extra
    raise ImportError(
        "tapgate.integrations.pydantic_ai needs PydanticAI: pip install 'tapgate[integrations]'"
    ) from exc

from tapgate.gate.models import Decision, Risk, ToolCall
from tapgate.integrations._decide import Checker, ask, edited, refusal, unappliable

__all__ = ["ApprovalToolset", "deferred_handler", "resolve_deferred"]


@dataclass
class ApprovalToolset(WrapperToolset[AgentDepsT]):
    """Every tool of ``wrapped`` runs only when ``gate`` allows the call.

    ``session`` scopes "allow for this session" grants (a conversation id);
    ``risk`` is the declared risk for tools the operator's policy does not
    name. Nothing else changes: the model sees the same tools.
    """

    gate: Checker
    session: str | None = None
    risk: Risk | None = None

    async def call_tool(
        self,
        name: str,
        tool_args: dict[str, Any],
        ctx: RunContext[AgentDepsT],
        tool: ToolsetTool[AgentDepsT],
    ) -> Any:
        """Ask tapgate, then run the wrapped tool or fail it with the reason."""
        call = ToolCall(tool=name, arguments=tool_args, session=self.session, risk=self.risk)
        decision = await ask(self.gate, call)
        if not decision.allowed:
            raise ToolFailed(refusal(decision))
        arguments = edited(decision)
        if arguments is not None:
            try:
                tool_args = tool.args_validator.validate_python(dict(arguments))
            except ValueError as exc:  # pydantic's ValidationError: the edit does not fit
                raise ToolFailed(unappliable(decision, f"{name}'s schema ({exc})")) from exc
        return await super().call_tool(name, tool_args, ctx, tool)


async def resolve_deferred(
    gate: Checker, requests: DeferredToolRequests, *, session: str | None = None
) -> DeferredToolResults:
    """tapgate's answer to every approval in ``requests``, for the run that continues.

    The calls are asked concurrently, so several approvers can decide at
    once. External calls (``requests.calls``) are not tapgate's to answer and
    are left out. ``answered_by`` records who decided each call.
    """
    parts = list(requests.approvals)
    decisions = await asyncio.gather(*(ask(gate, _call(part, session)) for part in parts))
    results = DeferredToolResults()
    for part, decision in zip(parts, decisions, strict=True):
        results.approvals[part.tool_call_id] = _answer(decision)
        results.answered_by[part.tool_call_id] = decision.decided_by
    return results


def deferred_handler(
    gate: Checker, *, session: str | None = None
) -> Callable[[RunContext[Any], DeferredToolRequests], Awaitable[DeferredToolResults]]:
    """A ``HandleDeferredToolCalls(handler=...)`` handler: approvals decided inside the run."""

    async def handle(ctx: RunContext[Any], requests: DeferredToolRequests) -> DeferredToolResults:
        return await resolve_deferred(gate, requests, session=session)

    return handle


def _call(part: ToolCallPart, session: str | None) -> ToolCall:
    return ToolCall(tool=part.tool_name, arguments=part.args_as_dict(), session=session)


def _answer(decision: Decision) -> ToolApproved | ToolDenied:
    if not decision.allowed:
        return ToolDenied(refusal(decision))
    arguments = edited(decision)
    return ToolApproved(override_args=None if arguments is None else dict(arguments))
