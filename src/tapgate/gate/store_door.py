"""The gate's door to the store for the layers above the domain.

Webhooks, the heartbeat, the server and the CLI need a few things only the
store knows (requests and grants as stored, the audit log, webhook event ids,
reminders, the leader's lock). They ask the gate, never ``gate.store``
(``tests/test_conventions.py`` enforces it), so a store change is a change
in the domain only. That is what the forwarding methods here are for: the
door itself, not a layer of logic. What the door adds beyond it is the
gate's clock (``now`` for grants, consuming, remembering events,
reminders) and its directory (whom a reminder or an escalation reaches).
The domain's own modules, which may touch the store, call it directly
(refusals' audit lines, typed reasons' event checks) rather than through
here. The methods live in this mixin of :class:`~tapgate.gate.gate.Gate` to
keep the gate's own module about deciding.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from datetime import datetime

from tapgate.gate.clock import Clock
from tapgate.gate.directory import Directory
from tapgate.gate.models import AuditEntry, Grant, Request, RequestStatus
from tapgate.store import Store
from tapgate.store.audit_chain import ChainRow, ChainVerdict
from tapgate.store.leader import Leadership

__all__ = ["StoreDoor"]


class StoreDoor:
    """Store reads and writes for the layers above the domain (needs store, clock, directory)."""

    store: Store
    clock: Clock
    directory: Directory

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
        """Requests, newest first (``id_prefix`` is matched without ASCII case: check again).

        ``approver`` keeps the requests that name them among their approvers.
        """
        return await self.store.list_requests(
            status=status,
            agent=agent,
            tool=tool,
            id_prefix=id_prefix,
            limit=limit,
            approver=approver,
            offset=offset,
        )

    async def batch_requests(self, batch_id: str) -> list[Request]:
        """A batch's calls that have a request, in the agent's order (none: no such batch)."""
        batch = await self.store.get_batch(batch_id)
        if batch is None:
            return []
        found = {r.id: r for r in await self.store.get_requests(batch.request_ids)}
        return [found[i] for i in batch.request_ids if i in found]

    async def get_request(self, request_id: str) -> Request:
        """The request as the store has it now."""
        return await self.store.get_request(request_id)

    async def count_requests(self, *, status: RequestStatus, approver: str | None = None) -> int:
        """How many requests have ``status`` (of ``approver``'s, if given)."""
        return await self.store.count_requests(status=status, approver=approver)

    async def grants(self, *, active_only: bool = True) -> list[Grant]:
        """Grants, newest first."""
        return await self.store.list_grants(active_at=self.clock.now() if active_only else None)

    async def revoke_grant(self, grant_id: str, *, by: str) -> bool:
        """Revoke a grant; future matching calls ask again."""
        return await self.store.revoke_grant(grant_id, by=by, now=self.clock.now())

    async def audit_log(
        self, *, since: datetime | None = None, request_id: str | None = None
    ) -> list[AuditEntry]:
        """Audit lines in the order they were written."""
        return await self.store.audit_log(since=since, request_id=request_id)

    def audit_chain(
        self, *, since: datetime | None = None, request_id: str | None = None
    ) -> AsyncIterator[ChainRow]:
        """Audit lines with their hashes, in chain order (the jsonl export)."""
        return self.store.audit_chain(since=since, request_id=request_id)

    async def verify_audit(self, *, anchors: Mapping[int, str] | None = None) -> ChainVerdict:
        """Check the audit chain from its genesis; the verdict names the first broken link."""
        return await self.store.verify_audit(anchors=anchors)

    async def consume(self, request_id: str) -> bool:
        """The agent was told of an approval: it authorises one execution (decision
        0012-an-approval-authorises-one-execution).

        True for the first call; an identical re-issue after it asks anew.
        """
        return await self.store.consume(request_id, self.clock.now())

    async def decided_since(
        self, agent: str, after: tuple[int, str] | None, limit: int = 100
    ) -> list[Request]:
        """``agent``'s requests decided after the cursor (decision number, id), in order."""
        return await self.store.decided_since(agent, after, limit)

    async def remember_event(self, channel: str, event_id: str) -> bool:
        """Remember a platform event id; False if it was seen before (a redelivery)."""
        return await self.store.remember_event(channel, event_id, self.clock.now())

    async def forget_events(self, before: datetime) -> int:
        """Forget event ids remembered before ``before`` (redeliveries stop after a day)."""
        return await self.store.forget_events(before)

    def leadership(self) -> Leadership | None:
        """The lock that elects one replica for timed duties (``None`` on SQLite: always)."""
        return self.store.leadership()

    async def remind(self, limit: int = 100) -> list[Request]:
        """Queue one reminder per approver of each request whose next reminder is due.

        Returns the requests reminded; each due time is reminded once (the
        store moves ``remind_at`` on by the request's ``remind_every``).
        """
        now = self.clock.now()
        reminded = []
        for request in await self.store.due_reminders(now, limit=limit):
            deliveries = self.directory.deliveries(request.approvers)
            if await self.store.queue_reminder(request, deliveries, now):
                reminded.append(request)
        return reminded

    async def escalate(self, limit: int = 100) -> list[Request]:
        """Add the escalation approvers of requests nobody answered in time, once each.

        Returns the requests as escalated (their approvers now include the
        added ones); the added approvers' cards are queued in the same
        transaction and say who was added and why.
        """
        now = self.clock.now()
        escalated = []
        for request in await self.store.due_escalations(now, limit=limit):
            deliveries = self.directory.deliveries(request.escalate_to)
            done = await self.store.escalate(request, deliveries, now)
            if done is not None:
                escalated.append(done)
        return escalated
