"""The outbox side of one card per batch: which cards are live, what they show, when stale.

A batch's card is an outbox row with ``batch_id`` set (one per approver ×
channel, queued by :func:`tapgate.store.batches.create`). Three things
differ from a single request's message, and live here:

- **liveness at claim time**: a card is worth sending while *any* member is
  pending and not overdue, not only the member its ``request_id`` names;
- **content**: the card shows every member the row's approver decides, in
  the agent's order, read in the same transaction as the claim or the
  staleness check, with the batch's ``version`` at that moment;
- **staleness**: every member's decision bumps ``batches.version`` in the
  deciding transaction (``lifecycle``); a sent card whose ``shown_version``
  is lower is updated once with the batch as it then is, so a wave of
  decisions costs one ``chat.update``, and a decision racing the first send
  is never lost (the send records the version it rendered).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Connection, and_, bindparam, select, update

from tapgate.gate.models import Request
from tapgate.store.rows import request_from_row
from tapgate.store.schema import batches, outbox, requests

__all__ = [
    "DONE",
    "Card",
    "cards",
    "for_approver",
    "live",
    "mark_shown",
    "members",
    "stale_condition",
]

_BATCH = select(batches.c["items"], batches.c.version).where(batches.c.id == bindparam("b_id"))
_MEMBERS = select(requests).where(requests.c.batch_id == bindparam("b_id"))

DONE = "decided"
"""``updated_status`` of a card that shows every one of its calls decided: no more updates."""

Card = tuple[int, list[Request]]
"""A batch's ``version`` and its members, as one transaction read them."""


def live(conn: Connection, batch_ids: Iterable[str], now: datetime) -> set[str]:
    """The batches among ``batch_ids`` with a member still pending and not overdue."""
    wanted = sorted(set(batch_ids))
    if not wanted:
        return set()
    query = (
        select(requests.c.batch_id)
        .where(
            requests.c.batch_id.in_(wanted),
            requests.c.status == "pending",
            requests.c.expires_at > now,
        )
        .distinct()
    )
    return {row[0] for row in conn.execute(query)}


def cards(conn: Connection, batch_ids: Iterable[str]) -> dict[str, Card]:
    """Each batch's version and members (in the agent's order), read together."""
    return {batch_id: _card(conn, batch_id) for batch_id in sorted(set(batch_ids))}


def members(conn: Connection, batch_id: str) -> list[Request]:
    """The requests this batch created (not reused ones of other batches), in the agent's order.

    A call that reused an identical pending request keeps that request's own
    messages, so it is not on this batch's card nor in its "Approve all".
    """
    return _card(conn, batch_id)[1]


def _card(conn: Connection, batch_id: str) -> Card:
    row = conn.execute(_BATCH, {"b_id": batch_id}).first()
    if row is None:
        return 0, []
    ids = [item["request_id"] for item in json.loads(row[0]) if "request_id" in item]
    order = {request_id: n for n, request_id in enumerate(ids)}
    found = [request_from_row(r) for r in conn.execute(_MEMBERS, {"b_id": batch_id}).mappings()]
    return int(row[1]), sorted(found, key=lambda r: (order.get(r.id, len(order)), r.id))


def for_approver(card: Card, approver: str) -> tuple[Request, ...]:
    """The members ``approver`` decides: a card lists only calls its reader may tap."""
    return tuple(r for r in card[1] if approver in r.approvers)


def stale_condition() -> ColumnElement[bool]:
    """A sent row needs an update: a decided request's message, or a card behind its batch."""
    version = select(batches.c.version).where(batches.c.id == outbox.c.batch_id).scalar_subquery()
    return and_(outbox.c.batch_id.is_(None), requests.c.status != "pending") | and_(
        outbox.c.batch_id.is_not(None), outbox.c.shown_version < version
    )


def mark_shown(conn: Connection, item_id: int, *, version: int, done: bool, now: datetime) -> None:
    """Record that a card shows ``version``; ``done`` (all its calls decided) ends its updates.

    A successful update resets the failure count: a card is updated once per
    decision wave, and a long batch must not run out of attempts by succeeding.
    """
    values: Mapping[str, Any] = {
        "shown_version": version,
        "updated_status": DONE if done else None,
        "update_attempts": 0,
        "update_error": None,
        "next_update_at": None,
        "updated_at": now,
    }
    conn.execute(update(outbox).where(outbox.c.id == item_id).values(**values))
