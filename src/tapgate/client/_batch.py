"""Several tool calls of one model turn, gated as one batch: one card, one wait, each run once.

:func:`batch_plan` is the sans-I/O plan behind ``RemoteGate.check_many`` and
``SyncRemoteGate.check_many`` (``POST /v1/tool-call-batches`` waiting one
slice, then long-polls of the batch until every call is decided), so the
async and sync gates share it as they share :mod:`tapgate.client._plans`.

:func:`run_batch` / :func:`run_batch_sync` are the ``guard`` of a turn: give
them the calls as ``functools.partial(tool, *args, **kwargs)``; every call is
decided in one batch, the allowed ones run (a ``@guard``-decorated tool runs
its undecorated function: the batch decision is its check) and each denied
one comes back as a :class:`~tapgate.client.Denied` carrying the reason.
As with ``guard``, a call whose arguments changed while it was decided is
not run (:class:`~tapgate.client.ArgumentsChanged`).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Sequence
from datetime import datetime
from typing import Any, Protocol

from tapgate.client._errors import ArgumentsChanged
from tapgate.client._guard import Denied, _bound, _jsonable, _snapshot
from tapgate.client._plans import Plan, Planner, Send
from tapgate.client._retrying import monotonic_deadline
from tapgate.client._wire import decision_from, read_json
from tapgate.gate.models import Decision, ToolCall

__all__ = ["AsyncBatchChecker", "SyncBatchChecker", "batch_plan", "run_batch", "run_batch_sync"]


class AsyncBatchChecker(Protocol):
    """Anything that decides a batch asynchronously: ``Gate``, ``RemoteGate``."""

    def check_many(self, calls: Sequence[ToolCall]) -> Awaitable[list[Decision]]: ...


class SyncBatchChecker(Protocol):
    """Anything that decides a batch synchronously: ``SyncRemoteGate``."""

    def check_many(self, calls: Sequence[ToolCall]) -> list[Decision]: ...


def batch_plan(planner: Planner, calls: Sequence[ToolCall]) -> Plan[list[Decision]]:
    """Submit ``calls`` as one batch and long-poll it until every call is decided.

    All calls share one session (``ValueError`` otherwise): a batch is one turn.
    """
    sessions = {call.session for call in calls}
    if len(sessions) != 1:
        raise ValueError("every call of a batch must share one session")
    body: dict[str, Any] = {"calls": [_call_body(call) for call in calls]}
    if calls[0].session is not None:
        body["session"] = calls[0].session
    body["wait"] = planner.long_poll
    send = Send(
        method="POST",
        path="/v1/tool-call-batches",
        json=body,
        timeout=planner.timeout,
        read_timeout=planner.timeout + planner.long_poll,
        idempotent=False,  # as a submit: never resent once it may have acted
    )
    batch = read_json((yield from planner.exchange(send)))
    while batch.get("status") == "pending":
        deadline = _last_expiry(batch)  # a restart is ridden out, never past the batch's life
        poll = Send(
            method="GET",
            path=f"/v1/tool-call-batches/{batch['id']}",
            params={"wait": f"{planner.long_poll:g}"},
            timeout=planner.timeout,
            read_timeout=planner.timeout + planner.long_poll,
        )
        batch = read_json((yield from planner.exchange(poll, deadline=deadline)))
    decided = [decision_from(state) for state in batch.get("calls", [])]
    if len(decided) != len(calls) or any(d is None for d in decided):
        raise ValueError("the server answered a decided batch with undecided calls")
    return [d for d in decided if d is not None]


def _last_expiry(batch: dict[str, Any]) -> float | None:
    """When the last call of ``batch`` expires, on the monotonic clock; ``None`` if unknown."""
    latest: datetime | None = None
    for state in batch.get("calls", []):
        text = state.get("expires_at") if isinstance(state, dict) else None
        try:
            when = datetime.fromisoformat(text) if isinstance(text, str) else None
        except ValueError:
            when = None
        if when is not None and when.tzinfo is not None and (latest is None or when > latest):
            latest = when
    return None if latest is None else monotonic_deadline(latest)


def _call_body(call: ToolCall) -> dict[str, Any]:
    body: dict[str, Any] = {"tool": call.tool, "arguments": dict(call.arguments)}
    if call.risk is not None:
        body["risk"] = call.risk
    return body


class _Prepared:
    """One partial as a call to decide, its arguments as decided, and what to run."""

    def __init__(self, item: functools.partial[Any], agent: str, session: str | None) -> None:
        self.fn = inspect.unwrap(item.func)  # a @guard tool: the batch decision is its check
        self.args, self.kwargs = item.args, dict(item.keywords)
        bound = _bound(inspect.signature(self.fn), self.args, self.kwargs)
        arguments = {k: _jsonable(v) for k, v in bound.items()}
        self.call = ToolCall(
            tool=self.fn.__name__, arguments=arguments, agent=agent, session=session
        )
        self.decided = _snapshot(bound)

    def check_unchanged(self) -> None:
        if _snapshot(_bound(inspect.signature(self.fn), self.args, self.kwargs)) != self.decided:
            raise ArgumentsChanged(
                f"{self.call.tool}'s arguments changed while the batch was being decided; "
                "not run (ask again with the new arguments)"
            )

    def refusal(self, decision: Decision) -> Denied | None:
        """The :class:`Denied` to return instead of running, or ``None``: run it (unchanged)."""
        if not decision.allowed:
            return Denied(tool=self.call.tool, reason=decision.reason, decision=decision)
        self.check_unchanged()
        return None


async def run_batch(
    gate: AsyncBatchChecker,
    calls: Sequence[functools.partial[Any]],
    *,
    agent: str = "default",
    session: str | None = None,
) -> list[Any]:
    """Decide ``calls`` as one batch; run the allowed ones in order, awaiting coroutines.

    Returns, per call, the tool's result or a :class:`Denied`.
    """
    prepared = [_Prepared(item, agent, session) for item in calls]
    decisions = await gate.check_many([p.call for p in prepared])
    results: list[Any] = []
    for item, decision in zip(prepared, decisions, strict=True):
        result = item.refusal(decision) or item.fn(*item.args, **item.kwargs)
        results.append(await result if inspect.isawaitable(result) else result)
    return results


def run_batch_sync(
    gate: SyncBatchChecker,
    calls: Sequence[functools.partial[Any]],
    *,
    agent: str = "default",
    session: str | None = None,
) -> list[Any]:
    """:func:`run_batch` for sync tools and a sync gate."""
    prepared = [_Prepared(item, agent, session) for item in calls]
    decisions = gate.check_many([p.call for p in prepared])
    return [
        item.refusal(decision) or item.fn(*item.args, **item.kwargs)
        for item, decision in zip(prepared, decisions, strict=True)
    ]
