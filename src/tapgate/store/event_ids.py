"""Webhook event ids already applied: how a platform's redelivery is told apart.

LINE (and any platform that retries a webhook it thinks was lost) sends the
same event again with the same id. The id is remembered in the transaction
that applies the event (a tap's decision, see
:mod:`tapgate.store.lifecycle`), so a redelivery can neither decide twice
nor be lost between "seen" and "decided". The same transaction deletes the
event's row from the webhook inbox (:mod:`tapgate.store.webhook_inbox`), so an
event is "stored, not yet applied" or "applied", never both. The heartbeat
forgets ids long after platforms stop redelivering them.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Connection, delete, select
from sqlalchemy.dialects import postgresql, sqlite

from tapgate.store.prepared import Prepared
from tapgate.store.schema import webhook_events
from tapgate.store.webhook_inbox import settle

__all__ = ["forget", "remember", "seen"]

# Runs on every tap: prepared to skip SQLAlchemy's per-call work (see prepared).
_REMEMBER = {
    "sqlite": Prepared(sqlite.insert(webhook_events).on_conflict_do_nothing()),
    "postgresql": Prepared(postgresql.insert(webhook_events).on_conflict_do_nothing()),
}


def remember(conn: Connection, source: str, event_id: str, now: datetime) -> bool:
    """Record ``(source, event_id)``; ``False`` if it was there already (a redelivery).

    Either way the event is applied once this transaction commits: its inbox
    row, if it has one, goes with it (a replay of an applied event settles it).
    """
    seen = {"source": source, "event_id": event_id, "received_at": now}
    settle(conn, source, event_id)
    return _REMEMBER[conn.dialect.name].rowcount(conn, seen) == 1


def seen(conn: Connection, source: str, event_id: str) -> bool:
    """Whether ``(source, event_id)`` was applied already (a read: nothing is remembered)."""
    found = select(webhook_events.c.event_id).where(
        webhook_events.c.source == source, webhook_events.c.event_id == event_id
    )
    return conn.execute(found).first() is not None


def forget(conn: Connection, before: datetime) -> int:
    """Drop the ids received before ``before``; how many were dropped."""
    statement = delete(webhook_events).where(webhook_events.c.received_at < before)
    return conn.execute(statement).rowcount
