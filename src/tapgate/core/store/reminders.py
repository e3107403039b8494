"""Reminders: pending requests nobody has answered for a while, reminded about once.

The heartbeat asks for the requests due a reminder and queues one message
per approver and channel for each. ``reminded_at`` is set by a
compare-and-set in the transaction that queues the messages, so two
heartbeats (or two replicas) never remind about one request twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import Connection, select, update

from tapgate.core.models import Delivery, Request
from tapgate.core.store import outbox
from tapgate.core.store.rows import request_from_row
from tapgate.core.store.schema import requests

__all__ = ["due", "queue"]


def due(conn: Connection, cutoff: datetime, limit: int) -> list[Request]:
    """Pending requests created before ``cutoff`` and never reminded about, oldest first."""
    query = (
        select(requests)
        .where(
            requests.c.status == "pending",
            requests.c.created_at <= cutoff,
            requests.c.reminded_at.is_(None),
        )
        .order_by(requests.c.created_at)
        .limit(limit)
    )
    return [request_from_row(r) for r in conn.execute(query).mappings()]


def queue(conn: Connection, request_id: str, deliveries: Sequence[Delivery], now: datetime) -> bool:
    """Mark the request reminded and queue the messages; ``False`` if it was not due.

    Not due: decided, reminded already, or past its deadline (the sweep may
    lag behind it, and nobody can decide that one any more).
    """
    mark = (
        update(requests)
        .where(
            requests.c.id == request_id,
            requests.c.status == "pending",
            requests.c.expires_at > now,
            requests.c.reminded_at.is_(None),
        )
        .values(reminded_at=now)
    )
    if conn.execute(mark).rowcount != 1:
        return False
    outbox.queue(conn, request_id, deliveries, now, kind="reminder")
    return True
