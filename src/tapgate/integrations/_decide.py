"""What every adapter shares: ask a gate of either kind, and word a denial for the model.

Frameworks call the adapters from async code (PydanticAI, the OpenAI Agents
SDK, the Claude Agent SDK, LangGraph's ``ainvoke``), so :func:`ask` is async
and accepts the async gates (``RemoteGate``, ``Gate``) as they are and a
``SyncRemoteGate`` in a worker thread, so a wait for a human never blocks the
event loop. Errors of the gate (unreachable, 401) propagate: the framework's
run fails and nothing runs, which is the adapters' fail-closed answer.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Mapping
from typing import Any, cast

from tapgate.client import AsyncChecker, SyncChecker
from tapgate.client._ask import describe
from tapgate.gate.models import Decision, ToolCall

__all__ = ["Checker", "ask", "edited", "refusal", "unappliable"]

Checker = AsyncChecker | SyncChecker
"""Any gate: ``RemoteGate``, ``SyncRemoteGate`` or the in-process ``Gate``."""


async def ask(gate: Checker, call: ToolCall) -> Decision:
    """The gate's decision on ``call``, waiting for a human if the policy asks one."""
    if inspect.iscoroutinefunction(gate.check):
        return await cast(AsyncChecker, gate).check(call)
    return await asyncio.to_thread(cast(SyncChecker, gate).check, call)


def refusal(decision: Decision) -> str:
    """The denial as the model should read it: who decided, and why.

    The same words as the Claude Code hook's (``tapgate: denied by alice: not
    during the freeze``), so a model sees one form whatever the framework.
    """
    return f"tapgate: {describe(decision)}"


def edited(decision: Decision) -> Mapping[str, Any] | None:
    """The arguments an approver edited before approving, or ``None`` for any other decision."""
    return decision.arguments if decision.allowed and decision.edited else None


def unappliable(decision: Decision, where: str) -> str:
    """Why an edited approval does not run where the framework cannot apply the edit.

    Running the call as sent would run what the approver did not approve, so
    an adapter that cannot pass the edited arguments on refuses with this.
    """
    return (
        f"tapgate: {describe(decision)}, but only with edited arguments, which {where} "
        "cannot apply: the call was not run"
    )
