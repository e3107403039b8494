"""Where one request's messages stand in the outbox: sent, waiting for a retry, or failed.

A read for ``tapgate doctor --send-test``, which watches its test cards
leave through the server's own dispatcher: the outbox row is the one record
of whether a message reached the platform (``sent``), is waiting for another
attempt (``pending`` with ``last_error``), or was given up on (``failed``).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection, select

from tapgate.store.schema import outbox

__all__ = ["DeliveryState", "delivery_states"]


@dataclass(frozen=True, kw_only=True, slots=True)
class DeliveryState:
    """One outbox row of a request, as the dispatcher last left it."""

    request_id: str
    approver: str
    channel: str
    address: str
    status: str
    attempts: int
    last_error: str | None


def delivery_states(conn: Connection, request_ids: list[str]) -> list[DeliveryState]:
    """The first message (``kind = request``) of each of ``request_ids``, in outbox order."""
    c = outbox.c
    query = (
        select(c.request_id, c.approver, c.channel, c.address, c.status, c.attempts, c.last_error)
        .where(c.request_id.in_(request_ids), c.kind == "request")
        .order_by(c.id)
    )
    return [DeliveryState(**row) for row in conn.execute(query).mappings()]
