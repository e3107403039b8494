"""Ending pending requests by their ``on_timeout`` verdict: overdue, or with nobody to ask.

A request past its ``expires_at`` expires (the heartbeat's sweep, a waiter's
own deadline, a tap that came too late); one whose every message failed for
good is given up (:mod:`~tapgate.store.unreachable` finds those). Both end it
the same way: status ``expired``, the rule's ``on_timeout`` verdict for the
agent, a decision number, and the audit line the trigger writes.

One exception: a request an approver tapped "Deny…" on, whose typed reason is
still awaited (a ``deny`` row in ``pending_reasons``), ends with the verdict
deny whatever its ``on_timeout`` says: the approver's deny was acknowledged,
and an ``on_timeout: allow`` must not turn it into an allow.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ColumnElement, Connection, case, exists, literal, select, true, update

from tapgate.gate.models import Request
from tapgate.store import numbering
from tapgate.store.rows import request_from_row
from tapgate.store.schema import pending_reasons, requests

__all__ = ["UNREACHABLE", "expire", "expire_overdue", "give_up"]

# An approver's acknowledged "Deny…" outweighs on_timeout (see the module docstring).
_ASKED_TO_DENY = exists().where(
    pending_reasons.c.target == requests.c.id, pending_reasons.c.kind == "deny"
)
_VERDICT = case((_ASKED_TO_DENY, literal("deny")), else_=requests.c.on_timeout)
# {"on_timeout": "deny"} built in SQL, so a bulk expiry stays one statement.
_ON_TIMEOUT_DETAIL = literal('{"on_timeout": "') + _VERDICT + literal('"}')


def expire(conn: Connection, ids: list[str], now: datetime) -> list[Request]:
    """Expire those of ``ids`` still pending and overdue; the requests this expired."""
    overdue = requests.c.expires_at <= now
    return _end_by_timeout_verdict(conn, ids, now, overdue, by="timeout", reason=None)


UNREACHABLE = "no approver could be reached"
"""The reason of a request ended because every message to its approvers failed for good."""


def give_up(conn: Connection, ids: list[str], now: datetime) -> list[Request]:
    """End those of ``ids`` still pending by their ``on_timeout`` verdict: nobody can answer.

    Audited (by the trigger) as an expiry by ``unreachable``, with the reason
    the agent reads; a request decided meanwhile is left as it is.
    """
    return _end_by_timeout_verdict(conn, ids, now, true(), by="unreachable", reason=UNREACHABLE)


def _end_by_timeout_verdict(
    conn: Connection,
    ids: list[str],
    now: datetime,
    condition: ColumnElement[bool],
    *,
    by: str,
    reason: str | None,
) -> list[Request]:
    numbering.bump(conn)
    result = conn.execute(
        update(requests)
        .where(requests.c.id.in_(ids), requests.c.status == "pending", condition)
        .values(
            status="expired",
            resolved_at=now,
            resolved_by=by,
            resolution_reason=reason,
            resolution_detail=_ON_TIMEOUT_DETAIL,
            on_timeout=_VERDICT,
            decided_seq=numbering.SEQ,
        )
        .returning(*requests.c)
    )  # the "expired" audit line is written by a trigger
    ended = [request_from_row(r) for r in result.mappings()]
    numbering.stale_batches(conn, ended)
    return ended


def expire_overdue(conn: Connection, now: datetime, limit: int) -> list[Request]:
    """Expire up to ``limit`` overdue pending requests; those this call expired."""
    query = (
        select(requests.c.id)
        .where(requests.c.status == "pending", requests.c.expires_at <= now)
        .limit(limit)
    )
    ids = list(conn.execute(query).scalars())
    return expire(conn, ids, now) if ids else []
