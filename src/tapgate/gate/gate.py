"""The gate: turn a tool call into a decision, waiting for a human when policy asks.

``check`` is the whole story for an in-process agent; ``submit`` / ``wait`` /
``get_request`` split it for the HTTP API; ``resolve`` / ``cancel`` are what
taps (:mod:`tapgate.decisions.taps`) and operators call. Waiting is event-driven
(:mod:`tapgate.gate.waiters`); each waiter also wakes at its request's
deadline and expires it, so a timeout never depends on a sweep having run.
The gate is the only door to the store for the layers above core (webhooks,
heartbeat, CLI), so a store change is a change here only.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from functools import partial
from typing import TYPE_CHECKING, Any, Literal

from tapgate.errors import (
    AlreadyResolved,
    DuplicateEvent,
    NotAnApprover,
    RequestExpired,
    RequestNotFound,
)
from tapgate.gate.bus import EventBus
from tapgate.gate.clock import Clock, SystemClock
from tapgate.gate.directory import Directory
from tapgate.gate.handlers import Handler, HandlerFunction, Mode, answer_ask, as_handler
from tapgate.gate.models import (
    CONTACT_TOOL,
    DecidedAtOnce,
    Decision,
    EventKind,
    GateEvent,
    Request,
    Scope,
    Ticket,
    ToolCall,
)
from tapgate.gate.records import Asking, grant_decision, grant_maker, plan_call
from tapgate.gate.store_door import StoreDoor
from tapgate.gate.waiters import Waiters
from tapgate.policy.engine import Policy
from tapgate.policy.limits import NO_LIMITS, AgentLimits
from tapgate.store import Created, Store, Transition
from tapgate.store.notify import DecisionListener

if TYPE_CHECKING:
    from tapgate.gate.batching import BatchTicket

__all__ = ["Gate"]

log = logging.getLogger(__name__)

_EVENT_FOR: dict[str, EventKind] = {
    "approved": "resolved",
    "denied": "resolved",
    "expired": "expired",
    "cancelled": "cancelled",
}


class Gate(StoreDoor):
    """Decides tool calls: policy first, then grants, then a durable request to humans.

    Use it as an async context manager (or call :meth:`start` / :meth:`close`)
    so its reconciliation sweep runs; ``check`` works without it, but then only
    decisions made in this process wake its waiters. ``handler`` / ``mode``: core.handlers.
    """

    def __init__(
        self,
        *,
        store: Store,
        policy: Policy,
        directory: Directory | None = None,
        clock: Clock | None = None,
        bus: EventBus | None = None,
        reconcile_interval: float = 5.0,
        limits: Mapping[str, AgentLimits] | None = None,
        handler: Handler | HandlerFunction | None = None,
        mode: Mode = "normal",
    ) -> None:
        self.store = store
        self.handler = None if handler is None else as_handler(handler)
        self.mode: Mode = mode
        self.limits = dict(limits or {})
        """Each agent's limits on asking (see :mod:`tapgate.policy.limits`); others have none."""
        self.policy = policy
        self.directory = directory or Directory()
        self.clock: Clock = clock or SystemClock()
        self.bus = bus or EventBus()
        self.reconcile_interval = reconcile_interval
        sweep = partial(self.store.get_requests, decided=True)  # it wakes these only
        self._waiters = Waiters(self.clock, self.store.get_request, sweep)
        self._listener: DecisionListener | None = None

    def limits_for(self, agent: str) -> AgentLimits:
        """``agent``'s limits on asking, or none."""
        return self.limits.get(agent, NO_LIMITS)

    # -- lifecycle ------------------------------------------------------------------

    async def start(self) -> None:
        """Start the reconciliation sweep and, on PostgreSQL, the LISTEN for decisions."""
        self._waiters.start_sweep(self.reconcile_interval)
        if self._listener is None:
            self._listener = self.store.decision_listener(
                self._waiters.on_remote_decision, self.reconcile
            )
            if self._listener is not None:
                self._listener.start()

    async def close(self) -> None:
        """Stop the sweep and the listener. Pending requests stay pending in the store."""
        if self._listener is not None:
            await self._listener.close()
            self._listener = None
        await self._waiters.close()

    async def __aenter__(self) -> Gate:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- agents -----------------------------------------------------------------------

    async def check(self, call: ToolCall) -> Decision:
        """Decide ``call``; an "ask" waits for a human, the handler or the mode, or expires."""
        ticket = await self.submit(call)
        if ticket.decision is not None:
            return ticket.decision
        assert ticket.request is not None
        decision = await answer_ask(self, ticket.request, reused=ticket.reused)
        if decision.status == "approved":
            await self.consume(ticket.request.id)  # this check runs the tool: the approval is used
        return decision

    async def submit_many(self, calls: Sequence[ToolCall]) -> BatchTicket:
        """Decide every call at once if possible; those that ask become one batch (``batching``)."""
        from tapgate.gate.batching import submit_batch  # batching builds on the gate

        return await submit_batch(self, calls)

    async def check_many(self, calls: Sequence[ToolCall]) -> list[Decision]:
        """:meth:`check` for a batch: one decision per call, in order, once all are decided."""
        from tapgate.gate.batching import check_batch

        return await check_batch(self, calls)

    async def submit(self, call: ToolCall, *, question: bool = False) -> Ticket:
        """Decide now if policy or a grant can; otherwise create (or reuse) a request.

        ``question`` must be true exactly when ``call`` is a question for a
        human (:data:`~tapgate.gate.models.CONTACT_TOOL`): a typed answer
        approves a question, so a tool call must never be able to pose as one
        (``ValueError``). Only the HumanLayer-compatible contact route asks.
        """
        if (call.tool == CONTACT_TOOL) != question:
            raise ValueError(
                f"{CONTACT_TOOL!r} is reserved for questions to a human"
                if not question
                else f"a question must use the tool {CONTACT_TOOL!r}, not {call.tool!r}"
            )
        planned = self.plan(call, question=question)
        if isinstance(planned, Decision):
            return self.announce_at_once(call, planned)
        now = self.clock.now()
        created = await self.store.create_request(
            planned.request,
            planned.deliveries,
            now,
            planned.key,
            limits=self.limits_for(call.agent),
        )
        return self.ticket_for(planned, created)

    def plan(self, call: ToolCall, *, question: bool = False) -> Decision | Asking:
        """Policy's answer: a decision now, or the request a human must decide (not stored)."""
        return plan_call(call, self.policy, self.directory, now=self.clock.now(), question=question)

    def ticket_for(self, planned: Asking, created: Created) -> Ticket:
        """What asking did (see :meth:`Store.create_request`), announced and as a ticket."""
        call = planned.call
        if created.grant is not None:
            return self.announce_at_once(call, grant_decision(created.grant, planned.verdict.rule))
        if created.earlier is not None:  # an identical call's approval (consumed) or denial
            earlier = created.earlier
            decision = earlier.decision()
            assert decision is not None
            consumed = earlier.id if earlier.status == "approved" else None
            ticket = self.announce_at_once(call, decision)
            return dataclasses.replace(ticket, consumed=consumed)
        assert created.request is not None
        for expired in created.expired:
            self._settle(expired, "expired")
        if created.created:
            if not created.request.approvers and self.handler is None and self.mode == "normal":
                log.warning(
                    "request %s for %s has no approvers; it can only expire",
                    created.request.id,
                    call.tool,
                )
            self._publish("requested", created.request)
        return Ticket(decision=None, request=created.request, reused=not created.created)

    def announce_at_once(self, call: ToolCall, decision: Decision) -> Ticket:
        """A decision made without a request (policy, grant): published, then returned."""
        self.bus.publish_at_once(DecidedAtOnce(call=call, decision=decision, at=self.clock.now()))
        return Ticket(decision=decision)

    async def wait(self, request_id: str, timeout: float | None = None) -> Decision | None:
        """The decision for ``request_id``, waiting up to ``timeout`` seconds.

        Returns ``None`` if the request is still pending when ``timeout`` ends;
        with no timeout it returns at the request's deadline at the latest.
        Works from any process: the request is read from the store first.
        """
        return (await self.wait_for(request_id, timeout)).decision()

    async def wait_for(
        self, request_id: str, timeout: float | None = None, *, known: Request | None = None
    ) -> Request:
        """Like :meth:`wait`, but the request itself; ``known`` saves the first read."""
        request = known if known is not None else await self.store.get_request(request_id)
        if not request.is_pending:
            return request
        return await self.wait_pending(request.id, request.expires_at, timeout)

    async def wait_pending(
        self, request_id: str, expires_at: datetime, timeout: float | None = None
    ) -> Request:
        """:meth:`wait_for` of a pending request, by its id and deadline only.

        What the HTTP long-poll parks on: this frame, a future and a clock
        timer (no task, no copy of the request: 10,000 parked polls). A woken
        waiter gets the request from whoever decided it; a wait that ends
        undecided (``timeout``, or the waiters released) reads it again.
        """
        wait_end = None
        if timeout is not None:
            wait_end = self.clock.now() + timedelta(seconds=max(timeout, 0.0))
        while True:
            deadline = expires_at if wait_end is None else min(expires_at, wait_end)
            parked = self._waiters.park(request_id, deadline)
            # a decision that came between our read and the park
            self._waiters.catch_up(request_id)
            try:
                decided = await parked[0]
            finally:
                self._waiters.unpark(request_id, parked)
            if decided is not None:
                return decided
            if self._waiters.released or (wait_end is not None and wait_end < expires_at):
                return await self.store.get_request(request_id)
            if self.clock.now() < expires_at:
                continue  # a timer can fire a hair early by this clock: wait again
            transition = await self.store.expire(request_id, self.clock.now())
            if transition.request is None:
                raise RequestNotFound(request_id)
            if transition.outcome == "expired":
                self._settle(transition.request, "expired")
            if not transition.request.is_pending:
                return transition.request

    @property
    def listener(self) -> DecisionListener | None:
        """The PostgreSQL ``LISTEN`` for other replicas' decisions, once started (else ``None``)."""
        return self._listener

    @property
    def waiting(self) -> int:
        """How many waiters are parked in this process (long-polls, ``check`` calls)."""
        return self._waiters.count

    def waiting_on(self, request_id: str) -> int:
        """How many waiters of this process are parked on ``request_id``."""
        return self._waiters.count_for(request_id)

    def release_waiters(self) -> None:
        """Send every parked waiter home with the request as it is (server shutdown).

        Long-polls then answer "still pending" at once instead of holding a
        rolling restart for minutes; nothing changes in the store.
        """
        self._waiters.release()

    async def cancel(self, request_id: str, *, by: str, reason: str | None = None) -> Request:
        """Withdraw a pending request (the agent no longer needs the call)."""
        transition = await self.store.transition(
            request_id, to="cancelled", by=by, reason=reason, now=self.clock.now()
        )
        return self.apply(request_id, transition, by)

    # -- approvers ------------------------------------------------------------------

    async def resolve(
        self,
        request_id: str,
        verdict: Literal["approve", "deny"],
        *,
        by: str,
        scope: Scope = "once",
        reason: str | None = None,
        grant_ttl: float | None = None,
        grant_uses: int | None = None,
        authorize: bool = True,
        detail: dict[str, Any] | None = None,
        event: tuple[str, str] | None = None,
    ) -> Request:
        """Record a human decision exactly once.

        ``by`` must be one of the request's approvers unless ``authorize`` is
        false (the operator's audited break-glass). Raises
        :class:`~tapgate.errors.AlreadyResolved`, :class:`~tapgate.errors.RequestExpired`
        or :class:`~tapgate.errors.NotAnApprover`; a refused attempt is audited.
        ``event`` (platform, event id) is remembered in the same transaction: a
        redelivery raises :class:`~tapgate.errors.DuplicateEvent`, changing nothing.
        """
        make_grant = grant_maker(
            verdict, by=by, scope=scope, ttl=grant_ttl, uses=grant_uses, now=self.clock.now()
        )
        transition = await self.store.transition(
            request_id,
            to="approved" if verdict == "approve" else "denied",
            by=by,
            reason=reason,
            scope=scope if verdict == "approve" else "once",
            grant=make_grant,
            approver_check=authorize,
            now=self.clock.now(),
            detail={**(detail or {}), **({} if authorize else {"break_glass": True})},
            event=event,
        )
        if transition.outcome == "duplicate":
            raise DuplicateEvent(request_id, event[1] if event else "?")
        return self.apply(request_id, transition, by)

    def announce_decided(self, request: Request) -> None:
        """Wake and tell about a request decided outside :meth:`resolve` (a batch's answer)."""
        self._settle(request, _EVENT_FOR[request.status])

    def apply(self, request_id: str, transition: Transition, by: str) -> Request:
        """Wake and announce an applied transition; raise the refusal of any other."""
        request = transition.request
        if request is None:
            raise RequestNotFound(request_id)
        if transition.outcome == "applied":
            self._settle(request, _EVENT_FOR[request.status])
            return request
        if transition.outcome in ("unauthorized", "self_approval", "short_of_quorum"):
            raise NotAnApprover(request_id, by)
        if transition.outcome == "expired":
            self._settle(request, "expired")
            raise RequestExpired(request_id, request=request)
        if request.status == "expired":
            raise RequestExpired(request_id, request=request)
        raise AlreadyResolved(request_id, request.status, request.resolved_by, request=request)

    # -- housekeeping --------------------------------------------------------

    async def expire_overdue(self) -> list[Request]:
        """Expire every overdue pending request (the heartbeat's job) and wake their waiters."""
        return self._settle_all(await self.store.expire_overdue(self.clock.now()), "expired")

    async def give_up(self, request_ids: list[str]) -> list[Request]:
        """End requests no approver can be reached for, by ``on_timeout`` (see ``store.reach``)."""
        return self._settle_all(await self.store.give_up(request_ids, self.clock.now()), "expired")

    def _settle_all(self, requests: list[Request], kind: EventKind) -> list[Request]:
        for request in requests:
            self._settle(request, kind)
        return requests

    async def reconcile(self) -> int:
        """Wake waiters whose request another process decided; returns how many woke."""
        return await self._waiters.reconcile()

    def _settle(self, request: Request, kind: EventKind) -> None:
        self._waiters.wake(request)
        self._publish(kind, request)

    def _publish(self, kind: EventKind, request: Request) -> None:
        self.bus.publish(GateEvent(kind=kind, request=request, at=self.clock.now()))
