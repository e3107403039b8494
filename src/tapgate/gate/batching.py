"""Batches of parallel tool calls: decided together by policy, asked together, waited on together.

Models emit several tool calls in one turn. :func:`submit_batch` decides
every call by policy and grants at once and turns the ones that ask into one
batch (decision 0011-a-batch-is-a-set-of-requests): each is still its own request, decided exactly
once and bound to its own arguments digest, but they share a ``batch_id`` so
approvers see one card and can "Approve all" (one compare-and-set per
still-pending member). The batch row keeps the calls in the agent's order,
with the decisions made at once, so ``GET /v1/tool-call-batches/{id}``
answers the same after a restart or on another replica.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from tapgate.errors import AlreadyResolved, DuplicateEvent, RequestExpired, RequestNotFound
from tapgate.gate.handlers import answer_ask
from tapgate.gate.models import Decision, Grant, Request, Scope, Ticket, ToolCall
from tapgate.gate.records import Asking, grant_decision, grant_maker, new_id
from tapgate.store import Created, Transition
from tapgate.store.batches import Ask, Batch, BatchItem

if TYPE_CHECKING:
    from tapgate.gate.gate import Gate

__all__ = [
    "MAX_CALLS",
    "BatchState",
    "BatchTicket",
    "cancel_batch",
    "check_batch",
    "consume_all",
    "read_batch",
    "resolve_batch",
    "submit_batch",
    "wait_batch",
]

MAX_CALLS = 50
"""Calls per batch: more than a model emits in one turn, few enough for one card."""


@dataclass(frozen=True, kw_only=True, slots=True)
class BatchTicket:
    """What :func:`submit_batch` returns: the batch id and one ticket per call, in order."""

    id: str
    tickets: tuple[Ticket, ...]


@dataclass(frozen=True, kw_only=True, slots=True)
class BatchState:
    """A batch as it stands: each call's request (current) or its decision made at once."""

    batch: Batch
    requests: dict[str, Request]

    @property
    def status(self) -> Literal["pending", "decided"]:
        """``pending`` while any call of the batch waits for a human."""
        pending = any(r.is_pending for r in self.requests.values())
        return "pending" if pending else "decided"


async def submit_batch(gate: Gate, calls: Sequence[ToolCall]) -> BatchTicket:
    """Decide what can be decided now; store the rest as one batch of requests (one transaction).

    All calls must be the same agent's (``ValueError`` otherwise, or for an
    empty batch or one over :data:`MAX_CALLS`). Questions cannot be batched.
    """
    if not calls or len(calls) > MAX_CALLS:
        raise ValueError(f"a batch holds 1 to {MAX_CALLS} calls, not {len(calls)}")
    agents = {call.agent for call in calls}
    if len(agents) != 1:
        raise ValueError("every call of a batch must be the same agent's")
    batch_id = new_id()
    planned: list[Decision | Asking] = [gate.plan(call) for call in calls]
    asks = []
    for index, plan in enumerate(planned):
        if isinstance(plan, Asking):
            request = dataclasses.replace(plan.request, batch_id=batch_id)
            planned[index] = dataclasses.replace(plan, request=request)
            asks.append(
                Ask(index=index, request=request, deliveries=plan.deliveries, grant_key=plan.key)
            )
    items = tuple(
        BatchItem(tool=call.tool, decision=plan if isinstance(plan, Decision) else None)
        for call, plan in zip(calls, planned, strict=True)
    )
    batch = Batch(
        id=batch_id,
        agent=calls[0].agent,
        session=calls[0].session,
        created_at=gate.clock.now(),
        items=items,
    )
    limits = gate.limits_for(batch.agent)
    now = gate.clock.now()
    stored, created = await gate.store.create_batch(batch, asks, now, _item_for, limits=limits)
    results = dict(zip((ask.index for ask in asks), created, strict=True))
    tickets = []
    for index, (call, plan) in enumerate(zip(calls, planned, strict=True)):
        if isinstance(plan, Decision):
            tickets.append(gate.announce_at_once(call, plan))
        else:
            tickets.append(gate.ticket_for(plan, results[index]))
    return BatchTicket(id=stored.id, tickets=tuple(tickets))


def _item_for(ask: Ask, created: Created) -> BatchItem:
    """The batch item of an ask, from what asking did (see ``Gate.ticket_for``)."""
    tool = ask.request.tool
    if created.grant is not None:
        return BatchItem(tool=tool, decision=grant_decision(created.grant, ask.request.rule))
    if created.earlier is not None:
        return BatchItem(tool=tool, decision=created.earlier.decision())
    assert created.request is not None
    return BatchItem(tool=tool, request_id=created.request.id)


async def read_batch(gate: Gate, batch_id: str, agent: str | None = None) -> BatchState:
    """The batch and its requests now; :class:`RequestNotFound` if absent (or ``agent``'s not)."""
    batch = await gate.store.get_batch(batch_id)
    if batch is None or (agent is not None and batch.agent != agent):
        raise RequestNotFound(batch_id)
    found = await gate.store.get_requests(batch.request_ids)
    return BatchState(batch=batch, requests={r.id: r for r in found})


async def wait_batch(
    gate: Gate, batch_id: str, timeout: float | None, agent: str | None = None
) -> BatchState:
    """The batch once every call is decided, or as it stands when ``timeout`` ends."""
    state = await read_batch(gate, batch_id, agent)
    pending = [r for r in state.requests.values() if r.is_pending]
    if not pending:
        return state
    waited = await asyncio.gather(*(gate.wait_for(r.id, timeout, known=r) for r in pending))
    return BatchState(batch=state.batch, requests={**state.requests, **{r.id: r for r in waited}})


async def check_batch(gate: Gate, calls: Sequence[ToolCall]) -> list[Decision]:
    """One decision per call, in order, once every call is decided (approvals consumed).

    Each call that asks is answered as :meth:`Gate.check` answers one: by the
    gate's mode, its handler racing the chat, or a human
    (:func:`~tapgate.gate.handlers.answer_ask`). A terminal prompt shows them
    one after the other (it holds a lock).
    """
    ticket = await submit_batch(gate, calls)
    asking = [(t.request, t.reused) for t in ticket.tickets if t.decision is None and t.request]
    decided = await asyncio.gather(*(answer_ask(gate, r, reused=again) for r, again in asking))
    by_id = dict(zip((r.id for r, _ in asking), decided, strict=True))
    decisions = []
    for t in ticket.tickets:
        decision = t.decision if t.decision is not None else by_id[t.request_id or ""]
        assert decision is not None  # with no timeout, wait returns at the deadline at the latest
        if decision.status == "approved" and decision.request_id is not None and t.decision is None:
            await gate.consume(decision.request_id)
        decisions.append(decision)
    return decisions


async def consume_all(gate: Gate, request_ids: Sequence[str]) -> int:
    """The agent was told of these approvals of a batch: each consumed once, in one transaction.

    As ``Gate.consume`` per request (one compare-and-set each), but a batch's
    answer used to consume 20 approvals in 20 transactions, one after
    another on the long-poll's path (docs/benchmarks.md).
    """
    return await gate.store.consume_all(request_ids, gate.clock.now())


async def cancel_batch(
    gate: Gate, batch_id: str, *, by: str, reason: str | None = None, agent: str | None = None
) -> BatchState:
    """Withdraw every still-pending call of the batch; calls decided meanwhile stay decided."""
    state = await read_batch(gate, batch_id, agent)
    current = dict(state.requests)
    for request in state.requests.values():
        if not request.is_pending:
            continue
        try:
            current[request.id] = await gate.cancel(request.id, by=by, reason=reason)
        except (AlreadyResolved, RequestExpired) as refused:
            if isinstance(refused.request, Request):
                current[request.id] = refused.request
    return BatchState(batch=state.batch, requests=current)


async def resolve_batch(
    gate: Gate,
    batch_id: str,
    verdict: Literal["approve", "deny"],
    *,
    by: str,
    scope: Scope = "once",
    reason: str | None = None,
    detail: dict[str, Any] | None = None,
    event: tuple[str, str] | None = None,
    may_remember: Callable[[Request], bool] | None = None,
) -> list[Transition]:
    """ "Approve all" / "Deny all": each still-pending call decided by ``by``, in one transaction.

    Only what :mod:`tapgate.decisions.batch_taps` calls (it owns who may tap). Each
    member is its own compare-and-set with its own approver check and audit
    (decision 0011-a-batch-is-a-set-of-requests); "session" grants each call its own fingerprint.
    Returns one transition per member, in the agent's order (``final`` for
    one decided before). Raises :class:`RequestNotFound` for an unknown
    batch and :class:`DuplicateEvent` for a redelivered ``event``.
    ``may_remember`` says, per call, whether the policy lets its approval be
    remembered: a call it refuses is approved once, with no grant, whatever
    the batch's button asked (every answer narrows, never widens).
    """
    make_grant = grant_maker(verdict, by=by, scope=scope, now=gate.clock.now())
    if make_grant is not None and may_remember is not None:
        make_grant = _only_where(may_remember, make_grant)
    transitions = await gate.store.resolve_batch(
        batch_id,
        to="approved" if verdict == "approve" else "denied",
        by=by,
        now=gate.clock.now(),
        reason=reason,
        scope=scope if verdict == "approve" else "once",
        grant=make_grant,
        detail={**(detail or {}), "batch": batch_id},
        event=event,
    )
    if transitions is None:
        raise DuplicateEvent(batch_id, event[1] if event else "?")
    if not transitions:
        raise RequestNotFound(batch_id)
    for transition in transitions:
        if transition.outcome in ("applied", "expired") and transition.request is not None:
            gate.announce_decided(transition.request)
    return transitions


def _only_where(
    may_remember: Callable[[Request], bool], make_grant: Callable[[Request], Grant | None]
) -> Callable[[Request], Grant | None]:
    """``make_grant`` for the calls ``may_remember`` lets be remembered, no grant for the rest."""

    def grant(request: Request) -> Grant | None:
        return make_grant(request) if may_remember(request) else None

    return grant
