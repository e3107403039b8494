"""Reminders and escalation: pending requests nobody has answered for a while.

Reminders repeat: a request asked with ``remind_every`` carries ``remind_at``,
the time of its next reminder. The heartbeat asks for the requests due and
queues one message per approver and channel for each, in the transaction
that moves ``remind_at`` forward by a compare-and-set on the value it read,
so two heartbeats (or two replicas) never queue one reminder twice, and a
request decided or expired is never reminded about again.

Escalation happens once: ``escalated_at`` is set by a compare-and-set in the
transaction that adds ``escalate_to`` to the request's approvers and queues
their messages, so the added approvers exist exactly when their cards do.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, Connection, select, update

from tapgate.gate.models import Delivery, Request
from tapgate.store import outbox
from tapgate.store.rows import request_from_row
from tapgate.store.schema import requests

__all__ = ["due", "due_escalations", "escalate", "queue"]


def due(conn: Connection, now: datetime, limit: int) -> list[Request]:
    """Pending, unexpired requests whose next reminder is due, most overdue first."""
    return _due(conn, requests.c.remind_at, now, limit)


def _due(
    conn: Connection, at: ColumnElement[datetime], now: datetime, limit: int, *more: Any
) -> list[Request]:
    query = (
        select(requests)
        .where(requests.c.status == "pending", at <= now, requests.c.expires_at > now, *more)
        .order_by(at)
        .limit(limit)
    )
    return [request_from_row(r) for r in conn.execute(query).mappings()]


def queue(
    conn: Connection, request: Request, deliveries: Sequence[Delivery], now: datetime
) -> bool:
    """Move ``request``'s next reminder on and queue the messages; ``False`` if not due.

    Not due: decided, reminded meanwhile (``remind_at`` is no longer what
    ``request`` read), or past its deadline (the sweep may lag behind it,
    and nobody can decide that one any more).
    """
    if request.remind_at is None:
        return False
    mark = (
        update(requests)
        .where(
            requests.c.id == request.id,
            requests.c.status == "pending",
            requests.c.expires_at > now,
            requests.c.remind_at == request.remind_at,
        )
        .values(reminded_at=now, remind_at=now + timedelta(seconds=request.remind_every))
    )
    if conn.execute(mark).rowcount != 1:
        return False
    outbox.queue(conn, request.id, deliveries, now, kind="reminder")
    return True


def due_escalations(conn: Connection, now: datetime, limit: int) -> list[Request]:
    """Pending, unexpired requests past ``escalate_at`` and not escalated yet."""
    return _due(conn, requests.c.escalate_at, now, limit, requests.c.escalated_at.is_(None))


def escalate(
    conn: Connection, request: Request, deliveries: Sequence[Delivery], now: datetime
) -> Request | None:
    """Add ``request.escalate_to`` to its approvers and queue their cards, once.

    ``None`` when it was not due any more (decided, expired, or escalated by
    another replica). The approvers column is written from what ``request``
    read: nothing else changes a request's approvers while it is pending.
    """
    added = [a for a in request.escalate_to if a not in request.approvers]
    approvers = [*request.approvers, *added]
    mark = (
        update(requests)
        .where(
            requests.c.id == request.id,
            requests.c.status == "pending",
            requests.c.expires_at > now,
            requests.c.escalated_at.is_(None),
        )
        .values(escalated_at=now, approvers=json.dumps(approvers))
        .returning(*requests.c)
    )
    row = conn.execute(mark).mappings().first()
    if row is None:
        return None
    outbox.queue(conn, request.id, deliveries, now, kind="request")
    return request_from_row(row)
