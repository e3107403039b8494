"""The store's public face: one :class:`Store` per process, one method per operation.

``Store`` opens and closes the database, says which backend it is, and runs each
operation as one transaction on its runner (:mod:`tapgate.store.engine`):
reads with ``runner.read``, writes with ``runner.run``. Each lives with its concept:

``lifecycle``, ``expiry``, ``requests``, ``grants``, ``reminders``, ``events``,
``batches``; ``store.outbox`` / ``calls`` / ``inbox`` / ``reasons`` /
``owned_grants`` / ``web`` / ``conversations`` are attributes.
Methods stay here, thin: callers see one object, concept modules no ``async``.
The audit log's methods (``record``, ``audit_log``, ``audit_chain``,
``verify_audit``) are inherited from :class:`~tapgate.store.audit.AuditLog`:
paging the hashed chain and verifying it is more than a delegating line.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Iterable, Sequence
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import Connection
from sqlalchemy.exc import IntegrityError

from tapgate.errors import RequestNotFound, StoreError
from tapgate.gate.models import Delivery, Grant, Request, RequestStatus, Scope
from tapgate.policy.limits import NO_LIMITS, AgentLimits
from tapgate.store import (
    batches,
    event_ids,
    expiry,
    grants,
    lifecycle,
    reminders,
    unreachable,
)
from tapgate.store import engine as _engine
from tapgate.store import requests as _requests
from tapgate.store.approvals import Approvals
from tapgate.store.audit import AuditLog
from tapgate.store.batches import Ask, Batch, ItemFor
from tapgate.store.calls import ClientCalls
from tapgate.store.conversations import Conversations
from tapgate.store.grants import GrantKey
from tapgate.store.leader import Leadership
from tapgate.store.lifecycle import Created, TargetStatus, Transition
from tapgate.store.notify import DecisionListener
from tapgate.store.outbox import Outbox
from tapgate.store.owned_grants import OwnedGrants
from tapgate.store.reasons import PendingReasons
from tapgate.store.review_links import ReviewLinks
from tapgate.store.web_sessions import WebSessions
from tapgate.store.webhook_inbox import WebhookInbox

__all__ = ["Store"]

T = TypeVar("T")


class Store(AuditLog):
    """Async access to tapgate's tables; one instance per process, shared by all tasks."""

    def __init__(self, runner: _engine.Runner) -> None:
        self.runner = runner
        self.outbox = Outbox(runner)
        self.calls = ClientCalls(runner)
        self.approvals = Approvals(runner)
        self.inbox = WebhookInbox(runner)
        self.web = WebSessions(runner)
        self.review_links = ReviewLinks(runner)
        self.reasons = PendingReasons(runner)
        self.owned_grants = OwnedGrants(runner)
        self.conversations = Conversations(runner)

    @classmethod
    async def open(cls, url: str, *, migrate: bool = True) -> Store:
        """Connect to ``url`` (``sqlite:///…`` or ``postgresql://…``), migrating by default."""
        runner = _engine.connect(url)
        try:
            if migrate:
                await runner.run(_engine.upgrade)
        except Exception:
            await runner.close()
            raise
        return cls(runner)

    async def close(self) -> None:
        """Close every pooled connection."""
        await self.runner.close()

    async def __aenter__(self) -> Store:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def decision_listener(
        self, on_decided: Callable[[str], None], on_connected: Callable[[], Awaitable[Any]]
    ) -> DecisionListener | None:
        """A listener for decisions made by other replicas (PostgreSQL), else ``None``."""
        if isinstance(self.runner, _engine.AsyncRunner) and self.dialect == "postgresql":
            return DecisionListener(self.runner.engine, on_decided, on_connected)
        return None

    def leadership(self) -> Leadership | None:
        """Who runs the timed duties among replicas (PostgreSQL); ``None``: always this one."""
        if isinstance(self.runner, _engine.AsyncRunner) and self.dialect == "postgresql":
            return Leadership(self.runner.engine)
        return None

    @property
    def dialect(self) -> str:
        """``sqlite`` or ``postgresql``."""
        return self.runner.dialect

    async def run(self, fn: Callable[[Connection], T]) -> T:
        """Run ``fn(connection)`` in one write transaction (for migrations, tools and tests)."""
        return await self.runner.run(fn)

    async def is_current(self) -> bool:
        """Reachable and migrated to the head revision (for ``/readyz``)."""
        try:
            return await self.runner.read(_engine.current_revision) == _engine.head_revision()
        except Exception:
            return False

    # -- requests and their lifecycle -------------------------------------------------

    async def create_request(
        self,
        request: Request,
        deliveries: Sequence[Delivery],
        now: datetime,
        grant_key: GrantKey | None = None,
        *,
        limits: AgentLimits = NO_LIMITS,
    ) -> Created:
        """Insert a pending request with its outbox rows, or return the identical pending one.

        "Identical" is same agent, session, tool and argument digest; a unique
        partial index makes the check race-free across tasks and replicas. With
        ``grant_key``, an active grant is looked up first in the same
        transaction (one round trip for the common "ask" path).
        """
        for _ in range(3):
            try:
                return await self.runner.run(
                    lambda c: lifecycle.create(
                        c, request, deliveries, now, grant_key, limits=limits
                    )
                )
            except IntegrityError:
                continue  # a concurrent identical ask won the insert; reuse it
        raise StoreError("could not create or reuse a pending request")

    async def create_batch(
        self,
        batch: Batch,
        asks: Sequence[Ask],
        now: datetime,
        item_for: ItemFor,
        *,
        limits: AgentLimits = NO_LIMITS,
    ) -> tuple[Batch, list[Created]]:
        """Create a batch's requests and the batch itself in one transaction (see ``batches``)."""
        for _ in range(3):
            try:
                return await self.runner.run(
                    lambda c: batches.create(c, batch, asks, now, item_for, limits=limits)
                )
            except IntegrityError:
                continue  # a concurrent identical ask won an insert; run it again to reuse it
        raise StoreError("could not create a batch")

    async def get_batch(self, batch_id: str) -> Batch | None:
        """The batch with this id, or ``None``."""
        return await self.runner.read(lambda c: batches.get(c, batch_id))

    async def resolve_batch(
        self, batch_id: str, *, event: tuple[str, str] | None = None, **change: Any
    ) -> list[Transition] | None:
        """ "Approve all" / "Deny all": every still-pending member, in ONE transaction.

        ``change`` holds the fields of one :class:`~lifecycle.Change` (``to``,
        ``by``, ``now``, ``reason``, ``scope``, ``grant``, ``detail``), applied
        to each pending member with the approver check on: one compare-and-set
        per member, each authorised against *that* request's approvers and
        auditing its own refusal (``batches.decide_all``). ``None`` for an
        ``event`` handled before.
        """
        if isinstance(change.get("reason"), str):  # PostgreSQL cannot store NUL (see transition)
            change["reason"] = change["reason"].replace("\x00", "\ufffd")
        template = lifecycle.Change(request_id="", approver_check=True, **change)

        def change_for(request_id: str) -> lifecycle.Change:
            return dataclasses.replace(template, request_id=request_id)

        return await self.runner.run(
            lambda c: batches.decide_all(c, batch_id, change_for, template.now, event)
        )

    async def consume(self, request_id: str, now: datetime) -> bool:
        """Mark a once-approval used (the agent was told); True for the first caller only."""
        return await self.runner.run(lambda c: lifecycle.consume(c, request_id, now))

    async def consume_all(self, request_ids: Sequence[str], now: datetime) -> int:
        """:meth:`consume` for a batch's approvals: one compare-and-set each, one transaction.

        A batch's answer told its agent of 20 approvals in 20 transactions,
        one after another on the long-poll's path (docs/benchmarks.md).
        """
        return await self.runner.run(
            lambda c: sum(lifecycle.consume(c, i, now) for i in request_ids)
        )

    async def decided_since(
        self, agent: str, after: tuple[int, str] | None, limit: int = 100
    ) -> list[Request]:
        """``agent``'s requests decided after the cursor, in decision order."""
        return await self.runner.read(lambda c: _requests.decided_since(c, agent, after, limit))

    async def get_request(self, request_id: str) -> Request:
        """The request with this id; :class:`RequestNotFound` otherwise."""
        found = await self.runner.read(lambda c: _requests.get(c, request_id))
        if found is None:
            raise RequestNotFound(request_id)
        return found

    async def get_requests(self, ids: Iterable[str], *, decided: bool = False) -> list[Request]:
        """The requests among ``ids`` that exist; ``decided``: those no longer pending only."""
        wanted = list(ids)
        if not wanted:
            return []
        return await self.runner.read(lambda c: _requests.get_many(c, wanted, decided=decided))

    async def list_requests(
        self,
        *,
        status: RequestStatus | None = None,
        agent: str | None = None,
        tool: str | None = None,
        id_prefix: str | None = None,
        limit: int = 100,
        approver: str | None = None,
        offset: int = 0,
    ) -> list[Request]:
        """Requests, newest first, optionally filtered by status, agent, tool, id prefix, approver.

        ``id_prefix`` is matched with ``LIKE``, which SQLite compares without
        regard to ASCII case: callers that need an exact prefix check it again.
        """
        return await self.runner.read(
            lambda c: _requests.newest_first(
                c,
                status=status,
                agent=agent,
                tool=tool,
                id_prefix=id_prefix,
                limit=limit,
                approver=approver,
                offset=offset,
            )
        )

    async def count_requests(self, *, status: RequestStatus, approver: str | None = None) -> int:
        """How many requests have ``status`` (the pending gauge; an indexed count)."""
        return await self.runner.read(lambda c: _requests.count(c, status, approver))

    async def transition(
        self,
        request_id: str,
        *,
        to: TargetStatus,
        by: str,
        now: datetime,
        reason: str | None = None,
        scope: Scope | None = None,
        grant: Callable[[Request], Grant | None] | None = None,
        approver_check: bool = False,
        detail: dict[str, Any] | None = None,
        event: tuple[str, str] | None = None,
    ) -> Transition:
        """Compare-and-set a pending, unexpired request to ``to``; audit either way.

        With ``approver_check``, ``by`` must be one of the request's approvers,
        checked in the same transaction. ``event`` (platform, event id) is
        remembered in the same transaction too, so a redelivered webhook event
        can neither decide twice nor be lost between "seen" and "decided".
        ``grant`` builds the grant this decision
        makes ("allow for session", "always") from the current request; it
        commits with the decision, so it exists exactly when the approval does.
        """
        if reason is not None and "\x00" in reason:
            # An approver's typed answer is stored as text, and PostgreSQL cannot
            # store NUL: shown as U+FFFD on both backends rather than refused.
            reason = reason.replace("\x00", "\ufffd")
        change = lifecycle.Change(
            request_id=request_id,
            to=to,
            by=by,
            now=now,
            reason=reason,
            scope=scope,
            grant=grant,
            approver_check=approver_check,
            detail=detail or {},
            event=event,
        )
        return await self.runner.run(change)

    async def expire(self, request_id: str, now: datetime) -> Transition:
        """Expire one request if it is pending and overdue (a waiter reaching its deadline)."""
        return await self.runner.run(lambda c: lifecycle.expire_one(c, request_id, now))

    async def give_up(self, ids: list[str], now: datetime) -> list[Request]:
        """End pending requests nobody can be reached for, by their ``on_timeout`` verdict."""
        return await self.runner.run(lambda c: expiry.give_up(c, ids, now))

    async def unreachable_after(self, item_id: int) -> list[str]:
        """The pending requests a just-failed outbox row was the last live message of."""
        return await self.runner.read(lambda c: unreachable.unreachable_after(c, item_id))

    async def expire_overdue(self, now: datetime, limit: int = 500) -> list[Request]:
        """Expire pending requests whose deadline has passed; returns those this call expired."""
        return await self.runner.run(lambda c: expiry.expire_overdue(c, now, limit))

    # -- grants ---------------------------------------------------------------------

    async def list_grants(self, *, active_at: datetime | None = None) -> list[Grant]:
        """Grants, newest first; only those active at ``active_at`` when given."""
        found = await self.runner.read(grants.newest_first)
        return [g for g in found if active_at is None or g.active(active_at)]

    async def revoke_grant(self, grant_id: str, *, by: str, now: datetime) -> bool:
        """Revoke an active grant; False when there was none to revoke."""
        return await self.runner.run(lambda c: grants.revoke(c, grant_id, by=by, now=now))

    # -- reminders ----------------------------------------------------------------------

    async def due_reminders(self, now: datetime, limit: int = 100) -> list[Request]:
        """Pending requests whose next reminder (``remind_at``) is due."""
        return await self.runner.read(lambda c: reminders.due(c, now, limit))

    async def queue_reminder(
        self, request: Request, deliveries: Sequence[Delivery], now: datetime
    ) -> bool:
        """Queue one reminder per delivery, once per due time (compare-and-set on remind_at)."""
        return await self.runner.run(lambda c: reminders.queue(c, request, deliveries, now))

    async def due_escalations(self, now: datetime, limit: int = 100) -> list[Request]:
        """Pending requests past ``escalate_at``, not escalated yet."""
        return await self.runner.read(lambda c: reminders.due_escalations(c, now, limit))

    async def escalate(
        self, request: Request, deliveries: Sequence[Delivery], now: datetime
    ) -> Request | None:
        """Add the escalation approvers and queue their cards, once (``None``: not due)."""
        return await self.runner.run(lambda c: reminders.escalate(c, request, deliveries, now))

    # -- webhook events ----------------------------------------------------------------

    async def remember_event(self, source: str, event_id: str, now: datetime) -> bool:
        """Record a platform event id; False if it was seen before (a redelivery)."""
        return await self.runner.run(lambda c: event_ids.remember(c, source, event_id, now))

    async def seen_event(self, source: str, event_id: str) -> bool:
        """Whether the event was applied already; asking remembers nothing (``event_ids.seen``)."""
        return await self.runner.read(lambda c: event_ids.seen(c, source, event_id))

    async def forget_events(self, before: datetime) -> int:
        """Drop event ids older than ``before`` (platforms stop redelivering long before)."""
        return await self.runner.run(lambda c: event_ids.forget(c, before))
