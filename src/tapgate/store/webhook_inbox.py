"""The webhook inbox: verified events stored before the 200, deleted when applied.

A platform that got its 200 believes the tap was delivered; Slack never sends
it again, LINE only when redelivery is switched on. So a verified event that
may decide something is INSERTed here (one statement, one transaction) before
the webhook answers, and the row is deleted by :func:`settle` in the very
transaction that applies it, beside remembering its id in ``webhook_events``
(:func:`tapgate.store.event_ids.remember` calls it). A row that is still
here was acknowledged and not yet applied: the process died in between, or
applying it failed. :class:`WebhookInbox` hands such rows back for replay
(:mod:`tapgate.decisions.webhook_inbox` owns what replaying means).

Rows are keyed by ``(source, event_id)``, the same key the decision's
transaction remembers, which is what makes a replay of an applied event a
harmless ``duplicate`` (docs/architecture.md, "No tap lost after the ack").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, RowMapping, bindparam, delete, func, select, update
from sqlalchemy.dialects import postgresql, sqlite

from tapgate.store import engine as _engine
from tapgate.store.prepared import Prepared
from tapgate.store.schema import webhook_inbox

__all__ = ["InboxItem", "WebhookInbox", "settle"]

# Both run on every tap: prepared to skip SQLAlchemy's per-call work (see prepared).
# A second delivery of a stored, unapplied event keeps the first row (and its age).
_RECORD = {
    "sqlite": Prepared(sqlite.insert(webhook_inbox).on_conflict_do_nothing()),
    "postgresql": Prepared(postgresql.insert(webhook_inbox).on_conflict_do_nothing()),
}
_SETTLE = Prepared(
    delete(webhook_inbox).where(
        webhook_inbox.c.source == bindparam("b_source"),
        webhook_inbox.c.event_id == bindparam("b_event"),
    )
)
_DUE = (
    select(webhook_inbox)
    .where(
        webhook_inbox.c.source.in_(bindparam("b_sources", expanding=True)),
        webhook_inbox.c.received_at < bindparam("b_before"),
        webhook_inbox.c.attempts < bindparam("b_max"),
    )
    .order_by(webhook_inbox.c.received_at, webhook_inbox.c.event_id)
    .limit(bindparam("b_limit"))
)
_ATTEMPT = (
    update(webhook_inbox)
    .where(
        webhook_inbox.c.source == bindparam("b_source"),
        webhook_inbox.c.event_id == bindparam("b_event"),
    )
    .values(attempts=webhook_inbox.c.attempts + 1)
)


@dataclass(frozen=True, kw_only=True, slots=True)
class InboxItem:
    """One stored event: where from, its id, what the webhook needs to apply it again.

    ``payload`` is the webhook's own encoding of the verified, parsed event
    (core does not read it); ``attempts`` counts the replays before this one.
    """

    source: str
    event_id: str
    payload: str
    received_at: datetime
    attempts: int = 0


def settle(conn: Connection, source: str, event_id: str) -> None:
    """Delete the event's row, if any: it is applied in the transaction running this."""
    _SETTLE.rowcount(conn, {"b_source": source, "b_event": event_id})


class WebhookInbox:
    """The ``webhook_inbox`` table: record before the 200, list what is due a replay."""

    def __init__(self, runner: _engine.Runner) -> None:
        self.runner = runner

    async def record(self, items: Sequence[InboxItem]) -> None:
        """Store ``items`` in ONE transaction; returns once they are committed (durable)."""
        rows = [
            {
                "source": item.source,
                "event_id": item.event_id,
                "payload": item.payload,
                "received_at": item.received_at,
                "attempts": 0,
            }
            for item in items
        ]

        def run(conn: Connection) -> None:
            statement = _RECORD[conn.dialect.name]
            for row in rows:
                statement.rowcount(conn, row)

        await self.runner.run(run)

    async def due(
        self, sources: Sequence[str], *, before: datetime, max_attempts: int, limit: int = 100
    ) -> list[InboxItem]:
        """``sources``' rows received before ``before``, replayed < ``max_attempts`` times.

        Each one returned counts as an attempt (in the same transaction), so
        an event that can never be applied is handed out ``max_attempts``
        times in all, whichever replicas ask.
        """

        def run(conn: Connection) -> list[InboxItem]:
            params = {
                "b_sources": list(sources),
                "b_before": before,
                "b_max": max_attempts,
                "b_limit": limit,
            }
            found = [_item(row) for row in conn.execute(_DUE, params).mappings()]
            for item in found:
                conn.execute(_ATTEMPT, {"b_source": item.source, "b_event": item.event_id})
            return found

        return await self.runner.run(run)

    async def count(self) -> int:
        """How many rows wait to be applied (for tests and the operator)."""
        statement = select(func.count()).select_from(webhook_inbox)
        return await self.runner.read(lambda c: int(c.execute(statement).scalar_one()))

    async def forget(self, before: datetime) -> int:
        """Drop rows received before ``before``: given up on long ago; how many."""
        statement = delete(webhook_inbox).where(webhook_inbox.c.received_at < before)
        return await self.runner.run(lambda c: c.execute(statement).rowcount)


def _item(row: RowMapping) -> InboxItem:
    return InboxItem(
        source=row["source"],
        event_id=row["event_id"],
        payload=row["payload"],
        received_at=row["received_at"],
        attempts=row["attempts"],
    )
