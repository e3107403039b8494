"""The notification outbox: durable, leased delivery work.

Rows are written with their request, or with a reminder, by :func:`queue`
(see :mod:`tapgate.store.lifecycle` and :mod:`tapgate.store.reminders`).
A dispatcher *claims* due rows: the claim sets a lease (``lease_until``,
``lease_owner``) in the same transaction that selects them, with
``FOR UPDATE SKIP LOCKED`` on PostgreSQL, so two dispatchers never hold the
same row. Finishing a row (sent, retry later, failed) checks the lease owner,
so a dispatcher whose lease ran out cannot overwrite the work of the one that
took over. A crash between claim and finish only delays the row until its
lease ends. Rows of a request decided before they were sent are cancelled at
claim time instead of on the decision's hot path.

After a decision, each sent message whose platform can edit messages is
brought up to date once (``updated_status``), so Slack buttons turn into
"Approved by alice"; a batch's card once per decision wave (``batch_outbox``).
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import (
    Connection,
    and_,
    bindparam,
    case,
    func,
    insert,
    or_,
    select,
    type_coerce,
    update,
)

from tapgate.gate.models import Delivery, Request
from tapgate.store import batch_outbox
from tapgate.store import engine as _engine
from tapgate.store.rows import request_from_row
from tapgate.store.schema import UTCDateTime, outbox, requests

__all__ = ["MAX_UPDATE_ATTEMPTS", "NOT_EDITABLE", "Outbox", "OutboxItem", "queue"]

MAX_UPDATE_ATTEMPTS = 10
"""Tries to bring one sent message up to date before leaving it as it is."""

NOT_EDITABLE = "-"
"""``updated_status`` of a message on a channel that cannot edit messages."""


@dataclass(frozen=True, kw_only=True, slots=True)
class OutboxItem:
    """One message to send (or bring up to date), with its request as it is now."""

    id: int
    request: Request
    delivery: Delivery
    status: str
    attempts: int
    retry_key: str
    receipt: Mapping[str, Any] | None
    last_error: str | None
    updated_status: str | None
    update_attempts: int = 0
    batch_id: str | None = None
    members: tuple[Request, ...] = ()
    """A batch card's calls (those its approver decides, in order); empty for one request."""
    version: int = 0
    """The batch version ``members`` were read at (what the card will show)."""


_DUE = and_(
    outbox.c.status == "pending",
    outbox.c.next_attempt_at <= bindparam("b_now", type_=UTCDateTime),
    or_(
        outbox.c.lease_until.is_(None),
        outbox.c.lease_until <= bindparam("b_now", type_=UTCDateTime),
    ),
)
# Sent, not yet showing the decision, attempts left (the partial index covers the first two).
_TO_UPDATE = and_(
    outbox.c.status == "sent",
    outbox.c.updated_status.is_(None),
    outbox.c.update_attempts < bindparam("b_max_updates", MAX_UPDATE_ATTEMPTS),
)
_MINE = and_(outbox.c.id == bindparam("b_id"), outbox.c.lease_owner == bindparam("b_owner"))
_INSERT = insert(outbox)


def queue(
    conn: Connection,
    request_id: str,
    deliveries: Sequence[Delivery],
    now: datetime,
    *,
    kind: str,
    batch_id: str | None = None,
) -> None:
    """Add one message per delivery, due now (``kind``: ``request``, ``reminder`` or ``batch``).

    With ``batch_id`` each message is the batch's card (``request_id`` names
    one member the approver decides; see :mod:`~tapgate.store.batch_outbox`).

    Runs inside the transaction that creates the request or marks the
    reminder, so the messages exist exactly when that does. Each message gets
    its own retry key.
    """
    if not deliveries:
        return
    rows = [
        {
            "request_id": request_id,
            "approver": d.approver,
            "channel": d.channel,
            "address": d.address,
            "kind": kind,
            "batch_id": batch_id,
            "status": "pending",
            "attempts": 0,
            "next_attempt_at": now,
            "retry_key": str(uuid.uuid4()),
            "created_at": now,
            "updated_at": now,
        }
        for d in deliveries
    ]
    conn.execute(_INSERT, rows)


def _item(row: Mapping[Any, Any], request: Request) -> OutboxItem:
    receipt = row["receipt"]
    return OutboxItem(
        id=row["id"],
        request=request,
        delivery=Delivery(approver=row["approver"], channel=row["channel"], address=row["address"]),
        status=row["status"],
        attempts=row["attempts"],
        retry_key=row["retry_key"],
        receipt=json.loads(receipt) if receipt else None,
        last_error=row["last_error"],
        updated_status=row["updated_status"],
        update_attempts=row["update_attempts"],
        batch_id=row["batch_id"],
    )


class Outbox:
    """Claiming and finishing outbox rows; shares the store's runner."""

    def __init__(self, runner: _engine.Runner) -> None:
        self.runner = runner

    async def claim(
        self,
        now: datetime,
        *,
        owner: str,
        lease: float = 60.0,
        limit: int = 50,
        channels: Iterable[str] | None = None,
    ) -> list[OutboxItem]:
        """Lease up to ``limit`` due rows of pending requests, oldest first.

        Each claim counts as an attempt. Due rows whose request was decided
        meanwhile, or is past its deadline (the sweep may lag), are cancelled
        in the same transaction.
        """
        wanted = list(channels) if channels is not None else None
        return await self.runner.run(
            lambda c: _claim(c, now, owner, now + timedelta(seconds=lease), limit, wanted)
        )

    async def mark_sent(
        self,
        item_id: int,
        *,
        owner: str,
        receipt: Mapping[str, Any],
        now: datetime,
        editable: bool = True,
        shown_version: int | None = None,
    ) -> bool:
        """Record a delivery; False if the lease was lost (another dispatcher took over).

        A message that cannot be edited (LINE) is marked as needing no update.
        A batch card records the batch ``shown_version`` it rendered.
        """
        return await self._finish(
            item_id,
            owner,
            now,
            status="sent",
            receipt=json.dumps(dict(receipt), sort_keys=True),
            last_error=None,
            updated_status=None if editable else NOT_EDITABLE,
            shown_version=shown_version,
        )

    async def mark_retry(
        self, item_id: int, *, owner: str, error: str, at: datetime, now: datetime
    ) -> bool:
        """Give the row back for another attempt at ``at`` (survives restarts)."""
        return await self._finish(
            item_id, owner, now, status="pending", next_attempt_at=at, last_error=error
        )

    async def release(self, item_id: int, *, owner: str, at: datetime, now: datetime) -> bool:
        """Give a claimed row back untried, due again at ``at`` (the claim is not an attempt)."""
        return await self._finish(
            item_id, owner, now, next_attempt_at=at, attempts=outbox.c.attempts - 1
        )

    async def mark_failed(self, item_id: int, *, owner: str, error: str, now: datetime) -> bool:
        """Give up on the row for good (a permanent platform error)."""
        return await self._finish(item_id, owner, now, status="failed", last_error=error)

    async def _finish(self, item_id: int, owner: str, now: datetime, **values: Any) -> bool:
        statement = (
            update(outbox)
            .where(_MINE)
            .values(lease_until=None, lease_owner=None, updated_at=now, **values)
        )
        return await self.runner.run(
            lambda c: c.execute(statement, {"b_id": item_id, "b_owner": owner}).rowcount == 1
        )

    async def next_due(self, channels: Iterable[str] | None = None) -> datetime | None:
        """When the dispatcher next has something to do for ``channels``.

        The earliest of: a pending row's next claim (its next attempt time, or
        the end of its lease if another dispatcher holds it: a row leased
        elsewhere must not end this one's sleep at once, again and again,
        until the lease runs out), and a failed update's next try. Rows of
        channels the caller does not serve are never its business.
        """
        claimable = type_coerce(
            case(
                (outbox.c.lease_until > outbox.c.next_attempt_at, outbox.c.lease_until),
                else_=outbox.c.next_attempt_at,
            ),
            UTCDateTime,
        )
        sends = select(func.min(claimable)).where(outbox.c.status == "pending")
        updates = select(func.min(outbox.c.next_update_at)).where(
            _TO_UPDATE, outbox.c.next_update_at.is_not(None)
        )
        if channels is not None:
            wanted = list(channels)
            sends = sends.where(outbox.c.channel.in_(wanted))
            updates = updates.where(outbox.c.channel.in_(wanted))

        def run(conn: Connection) -> datetime | None:
            found = [conn.execute(q).scalar() for q in (sends, updates)]
            return min((at for at in found if at is not None), default=None)

        return await self.runner.read(run)

    async def stale(
        self, *, channels: Iterable[str], now: datetime | None = None, limit: int = 50
    ) -> list[OutboxItem]:
        """Sent messages whose request was decided and that do not show it yet.

        A request is decided once, so a message needs at most one update;
        rows drop out of the partial index ``ix_outbox_to_update`` as soon as
        they are updated (or sent on a channel that cannot edit), which keeps
        this query small however long the outbox grows. With ``now``, a row
        whose last update failed waits for its ``next_update_at``.
        """
        wanted = list(channels)
        query = (
            select(outbox, requests)
            .join(requests, requests.c.id == outbox.c.request_id)
            .where(_TO_UPDATE, outbox.c.channel.in_(wanted), batch_outbox.stale_condition())
            .order_by(outbox.c.id)
            .limit(limit)
        )
        if now is not None:
            query = query.where(
                or_(outbox.c.next_update_at.is_(None), outbox.c.next_update_at <= now)
            )
        return await self.runner.read(lambda c: _items(c, query))

    async def mark_updated(
        self, item_id: int, *, status: str, now: datetime, error: str | None = None
    ) -> None:
        """Record that the message now shows ``status`` (or gave up trying, with ``error``)."""
        statement = (
            update(outbox)
            .where(outbox.c.id == item_id)
            .values(
                updated_status=status,
                update_error=error,
                updated_at=now,
                update_attempts=outbox.c.update_attempts + 1,
            )
        )
        await self.runner.run(lambda c: c.execute(statement))

    async def mark_card_shown(
        self, item_id: int, *, version: int, done: bool, now: datetime
    ) -> None:
        """A batch card now shows ``version`` (``done``: every call on it decided)."""
        await self.runner.run(
            lambda c: batch_outbox.mark_shown(c, item_id, version=version, done=done, now=now)
        )

    async def mark_update_failed(
        self, item_id: int, *, error: str, now: datetime, retry_at: datetime | None = None
    ) -> None:
        """Count a failed update, to be tried again at ``retry_at`` (at once without one).

        After ``MAX_UPDATE_ATTEMPTS`` the message is left as it is.
        """
        statement = (
            update(outbox)
            .where(outbox.c.id == item_id)
            .values(
                update_error=error,
                updated_at=now,
                update_attempts=outbox.c.update_attempts + 1,
                next_update_at=retry_at,
            )
        )
        await self.runner.run(lambda c: c.execute(statement))


def _items(conn: Connection, query: Any) -> list[OutboxItem]:
    out = []
    for row in conn.execute(query).mappings():
        request = request_from_row({c.name: row[c] for c in requests.c})
        out.append(_item({c.name: row[c] for c in outbox.c}, request))
    found = batch_outbox.cards(conn, (i.batch_id for i in out if i.batch_id is not None))
    for n, item in enumerate(out):
        if item.batch_id is not None:
            card = found[item.batch_id]
            shown = batch_outbox.for_approver(card, item.delivery.approver)
            out[n] = dataclasses.replace(item, members=shown or (item.request,), version=card[0])
    return out


def _claim(  # noqa: PLR0917 - called once, from a lambda, with the claim's six facts
    conn: Connection,
    now: datetime,
    owner: str,
    lease_until: datetime,
    limit: int,
    channels: list[str] | None,
) -> list[OutboxItem]:
    due = (
        select(outbox.c.id, outbox.c.batch_id, requests.c.status, requests.c.expires_at)
        .join(requests, requests.c.id == outbox.c.request_id)
        .where(_DUE)
    )
    if channels is not None:
        due = due.where(outbox.c.channel.in_(channels))
    due = due.order_by(outbox.c.next_attempt_at, outbox.c.id).limit(limit)
    if conn.dialect.name == "postgresql":
        due = due.with_for_update(skip_locked=True, of=outbox)
    rows = conn.execute(due, {"b_now": now}).all()
    # A request past its deadline is as good as decided, even if the sweep has
    # not expired it yet: no approval message for what nobody can approve.
    # A batch's card is live while any of its calls is (see batch_outbox).
    cards = batch_outbox.live(conn, (r.batch_id for r in rows if r.batch_id is not None), now)
    alive = {
        r.id: r.batch_id in cards if r.batch_id else r.status == "pending" and r.expires_at > now
        for r in rows
    }
    live = [i for i, ok in alive.items() if ok]
    dead = [i for i, ok in alive.items() if not ok]
    if dead:
        conn.execute(
            update(outbox).where(outbox.c.id.in_(dead)).values(status="cancelled", updated_at=now)
        )
    if not live:
        return []
    conn.execute(
        update(outbox)
        .where(outbox.c.id.in_(live))
        .values(
            lease_until=lease_until,
            lease_owner=owner,
            updated_at=now,
            attempts=outbox.c.attempts + 1,
        )
    )
    query = (
        select(outbox, requests)
        .join(requests, requests.c.id == outbox.c.request_id)
        .where(outbox.c.id.in_(live))
        .order_by(outbox.c.next_attempt_at, outbox.c.id)
    )
    return _items(conn, query)
