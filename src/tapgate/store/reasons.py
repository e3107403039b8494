"""Pending reasons: the one request per approver that waits for their typed text on LINE.

LINE has no dialogs, so "Deny…" (and a question's Reply) is two events: the
tap, then the approver's next text message. Between them the approver's
intent lives here, as a row, so a restart or another replica still completes
it (:mod:`tapgate.decisions.typed_reasons` owns what completing means):

    tap ──ask (remember the tap's event id + INSERT, one transaction)──► waiting
    waiting ──typed text (compare-and-set)──► typed      (the text is the reason)
    waiting ──tap elsewhere / window ended (compare-and-set)──► lapsed (no reason)
    typed | lapsed ──the decision (core.taps, its own exactly-once event id)──► row deleted

Only a ``waiting`` row can become ``typed`` or ``lapsed``, each by one
``UPDATE … WHERE state = 'waiting'``: whichever of the text, a tap elsewhere
or the heartbeat comes first fixes whether the deny carries a reason, on every
replica. A row that is ``typed`` or ``lapsed`` gets a new deadline a short
grace ahead: the process that moved it decides at once and deletes the row;
if it dies first, the heartbeat finds the row due and decides it again (a
duplicate of nothing: the decision's event id is the row's id).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from sqlalchemy import (
    ColumnElement,
    Connection,
    RowMapping,
    bindparam,
    delete,
    insert,
    select,
    update,
)

from tapgate.store import engine as _engine
from tapgate.store import event_ids
from tapgate.store.schema import pending_reasons

__all__ = ["Busy", "PendingReason", "PendingReasons", "ReasonKind", "ReasonState", "Settled"]

ReasonKind = Literal["deny", "reply"]
ReasonState = Literal["waiting", "typed", "lapsed"]
Settled = Literal["moved", "stale", "duplicate"]
_T = pending_reasons.c
_OF = select(pending_reasons).where(_T.approver == bindparam("b_approver"))  # built once


@dataclass(frozen=True, kw_only=True, slots=True)
class PendingReason:
    """One approver's pending text: what it will decide, for whom, and until when.

    ``channel`` and ``user_id`` are the ids the tap came with, so the decision
    is authorised and audited exactly as the tap would have been. ``text`` is
    the typed reason (``None``: none, e.g. ``skip``) once ``state`` is ``typed``.
    """

    id: str
    approver: str
    kind: ReasonKind
    target: str
    channel: str
    user_id: str
    asked_at: datetime
    deadline: datetime
    state: ReasonState = "waiting"
    text: str | None = None


class Busy(Exception):  # a signal between core.reasons and its store, never raised further
    """The approver already has another pending reason: finish it first, then ask again."""

    def __init__(self, current: PendingReason) -> None:
        super().__init__(current.id)
        self.current = current


class PendingReasons:
    """The ``pending_reasons`` table (``store.reasons``): one short transaction per change."""

    def __init__(self, runner: _engine.Runner) -> None:
        self.runner = runner

    async def ask(
        self, pending: PendingReason, event: tuple[str, str] | None
    ) -> PendingReason | None:
        """Store ``pending`` with the tap's ``event`` id remembered, in ONE transaction.

        ``None``: the event was handled before (a redelivery). The same
        request asked again while its row still waits keeps the row (with the
        new deadline). Raises :class:`Busy` (nothing changed, the event not
        remembered) when the approver has another row: the caller finishes it first.
        """

        def run(conn: Connection) -> PendingReason | None:
            if event is not None and not event_ids.remember(conn, *event, pending.asked_at):
                return None
            current = _one(conn, _T.approver == pending.approver)
            if current is None:
                conn.execute(insert(pending_reasons).values(dataclasses.asdict(pending)))
                return pending
            same = (current.kind, current.target) == (pending.kind, pending.target)
            if not same or current.state != "waiting":
                raise Busy(current)  # rolls the remembered event back
            conn.execute(
                update(pending_reasons).where(_T.id == current.id).values(deadline=pending.deadline)
            )
            return dataclasses.replace(current, deadline=pending.deadline)

        return await self.runner.run(run)

    async def of(self, approver: str) -> PendingReason | None:
        """The approver's pending reason, if any (asked before every LINE postback: kept lean)."""

        def run(conn: Connection) -> PendingReason | None:
            row = conn.execute(_OF, {"b_approver": approver}).mappings().first()
            return None if row is None else _reason(row)

        return await self.runner.read(run)

    async def settle(
        self,
        reason_id: str,
        *,
        to: Literal["typed", "lapsed"],
        now: datetime,
        grace: timedelta,
        text: str | None = None,
        event: tuple[str, str] | None = None,
    ) -> tuple[Settled, PendingReason | None]:
        """Move a waiting row to ``typed`` (with ``text``) or ``lapsed``, and the row after.

        ``typed`` needs the window still open at ``now``; a ``lapsed`` move
        does not (a tap elsewhere ends the window early). ``event`` (the typed
        text's id) is remembered in the same transaction: ``duplicate`` for a
        redelivery, nothing changed. ``stale``: the row was no longer waiting
        (or its window had ended). The row comes back as it is after the
        transaction, or ``None`` when it is gone (decided and deleted meanwhile).
        """

        def run(conn: Connection) -> tuple[Settled, PendingReason | None]:
            if event is not None and not event_ids.remember(conn, *event, now):
                return "duplicate", None
            where = [_T.id == reason_id, _T.state == "waiting"]
            if to == "typed":
                where.append(_T.deadline > now)
            values = {"state": to, "text": text, "deadline": now + grace}
            moved = conn.execute(update(pending_reasons).where(*where).values(values)).rowcount
            return ("moved" if moved == 1 else "stale"), _one(conn, _T.id == reason_id)

        return await self.runner.run(run)

    async def drop(self, reason_id: str) -> None:
        """Delete the row: its decision is made (or there is nothing to decide)."""
        statement = delete(pending_reasons).where(_T.id == reason_id)
        await self.runner.run(lambda c: c.execute(statement))

    async def due(self, now: datetime, limit: int = 100) -> list[PendingReason]:
        """Rows whose deadline has passed: windows that ended, decisions a crash left undone."""
        query = select(pending_reasons).where(_T.deadline <= now).order_by(_T.deadline)
        query = query.limit(limit)
        return await self.runner.read(
            lambda c: [_reason(row) for row in c.execute(query).mappings()]
        )


def _one(conn: Connection, condition: ColumnElement[bool]) -> PendingReason | None:
    row = conn.execute(select(pending_reasons).where(condition)).mappings().first()
    return None if row is None else _reason(row)


def _reason(row: RowMapping) -> PendingReason:
    return PendingReason(
        id=row["id"],
        approver=row["approver"],
        kind=row["kind"],
        target=row["target"],
        channel=row["channel"],
        user_id=row["user_id"],
        asked_at=row["asked_at"],
        deadline=row["deadline"],
        state=row["state"],
        text=row["text"],
    )
