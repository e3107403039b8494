"""Approvals towards a quorum: one row per (request, approver), and the one decision.

decision 0015-quorum-rows: quorum is rows, not counters. :class:`Approve` runs as
one transaction:

1. take the decision counter's lock, then the request's row, in the order
   every deciding transaction takes them (a deny holding the counter while an
   approval held the row would deadlock), then lock the request's row
   (``SELECT … FOR UPDATE`` on PostgreSQL; SQLite's
   ``BEGIN IMMEDIATE`` already serialises writers), so two replicas counting
   approvals of one request take turns, and each counts the other's
   committed row (PostgreSQL's read committed reads a fresh snapshot per
   statement: the count after the lock sees every approval committed before);
2. a request of quorum 1, or one this approver cannot approve now (decided,
   overdue, not theirs, their own agent's), goes straight to the
   :class:`~tapgate.store.lifecycle.Change`, which decides or refuses and
   audits exactly as for any tap;
3. otherwise insert the approval row; the primary key turns a second tap by
   the same approver into ``counted`` (nothing changes; audited as refused);
4. count the rows: short of the quorum, the tap is ``partial`` (the
   request's ``approvals`` mirror is updated for the cards and the approval
   audited); the Nth runs the Change's compare-and-set, which decides the
   request exactly once and is itself checked against the count.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass

from sqlalchemy import Connection, bindparam, select, update
from sqlalchemy.dialects import postgresql, sqlite

from tapgate.store import audit, event_ids, numbering
from tapgate.store import engine as _engine
from tapgate.store.lifecycle import Change, Transition
from tapgate.store.rows import request_from_row
from tapgate.store.schema import approvals, requests

__all__ = ["Approvals", "Approve"]

_INSERT = {
    "sqlite": sqlite.insert(approvals).on_conflict_do_nothing(),
    "postgresql": postgresql.insert(approvals).on_conflict_do_nothing(),
}

_QUORUM = select(requests.c.quorum).where(requests.c.id == bindparam("b_id"))
"""Built once: building the select per tap cost ~5 % of the database thread (py-spy)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Approve:
    """One approval as a transaction: counted once, deciding when it completes the quorum."""

    change: Change

    def __call__(self, conn: Connection) -> Transition:
        change = self.change
        # A request's quorum never changes: an unlocked read routes quorum 1 as before.
        if (conn.execute(_QUORUM, {"b_id": change.request_id}).scalar() or 1) <= 1:
            return change(conn)
        # Locks in every decider's order: the decision counter, then the request's row.
        numbering.bump(conn)  # the decision counter's lock first, as every decision takes it
        locked = select(requests).where(requests.c.id == change.request_id).with_for_update()
        row = conn.execute(locked).mappings().first()
        current = request_from_row(row) if row is not None else None
        if (
            current is None
            or current.quorum <= 1
            or not current.is_pending
            or current.expires_at <= change.now
            or change.by not in current.approvers
            or change.by == current.owner
        ):
            return change(conn)
        if change.event is not None and not event_ids.remember(conn, *change.event, change.now):
            return Transition(request=None, outcome="duplicate")
        detail = json.dumps(change.detail, sort_keys=True) if change.detail else None
        values = {
            "request_id": change.request_id,
            "approver": change.by,
            "approved_at": change.now,
            "detail": detail,
        }
        fresh = conn.execute(_INSERT[conn.dialect.name], values).rowcount == 1
        names = tuple(
            conn.execute(
                select(approvals.c.approver)
                .where(approvals.c.request_id == change.request_id)
                .order_by(approvals.c.approved_at, approvals.c.approver)
            ).scalars()
        )
        conn.execute(
            update(requests)
            .where(requests.c.id == change.request_id)
            .values(approvals=json.dumps(list(names)))
        )
        counted = dataclasses.replace(current, approvals=names)
        if not fresh:
            change.refused(conn, "already approved by them: counted once")
            return Transition(request=counted, outcome="counted")
        if len(names) < current.quorum:
            progress = {**change.detail, "approvals": list(names), "quorum": current.quorum}
            audit.write(conn, change.now, "approval", change.request_id, change.by, progress)
            return Transition(request=counted, outcome="partial")
        reason = change.reason or f"approved by {' and '.join(names)} (quorum {current.quorum})"
        deciding = dataclasses.replace(change, event=None, approvals=len(names), reason=reason)
        return deciding(conn)


class Approvals:
    """The store's door for approvals (``store.approvals``): one method, one transaction."""

    def __init__(self, runner: _engine.Runner) -> None:
        self.runner = runner

    async def approve(self, change: Change) -> Transition:
        """Record ``change.by``'s approval exactly once; decide when it completes the quorum."""
        return await self.runner.run(Approve(change=change))

    async def of(self, request_id: str) -> list[str]:
        """Who approved ``request_id`` so far, in order (the rows, not the mirror)."""
        query = (
            select(approvals.c.approver)
            .where(approvals.c.request_id == request_id)
            .order_by(approvals.c.approved_at, approvals.c.approver)
        )
        return await self.runner.read(lambda c: list(c.execute(query).scalars()))
