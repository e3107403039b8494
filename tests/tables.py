"""Reading tables in tests where no public method does: one query, through ``Store.run``.

The store has no method to list a request's outbox rows: nothing in tapgate
needs one, so tests read the table here instead of the store growing methods
only they call.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select

from tapgate.store import Store
from tapgate.store.schema import outbox


@dataclass(frozen=True, kw_only=True, slots=True)
class OutboxRow:
    """The columns of one outbox row that tests look at (``receipt`` parsed)."""

    channel: str
    status: str
    attempts: int
    receipt: dict[str, Any] | None
    last_error: str | None
    updated_status: str | None
    update_attempts: int


async def outbox_rows(store: Store, request_id: str) -> list[OutboxRow]:
    """Every outbox row of a request (messages and reminders), in the order they were written."""
    query = select(outbox).where(outbox.c.request_id == request_id).order_by(outbox.c.id)
    rows = await store.run(lambda c: list(c.execute(query).mappings()))
    return [
        OutboxRow(
            channel=r["channel"],
            status=r["status"],
            attempts=r["attempts"],
            receipt=json.loads(r["receipt"]) if r["receipt"] else None,
            last_error=r["last_error"],
            updated_status=r["updated_status"],
            update_attempts=r["update_attempts"],
        )
        for r in rows
    ]
