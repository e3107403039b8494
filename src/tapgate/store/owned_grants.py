"""Grants as the approver who made them sees them: their active ones, and revoking one.

An approver lists and revokes their own grants from the chat
(:mod:`tapgate.decisions.chat_grants`); the operator's ``tapgate grants`` commands
see every grant (:mod:`tapgate.store.grants`). A revoke from the chat is
one transaction that does everything a tap's decision does:

- remembers the platform's event id first (:mod:`~tapgate.store.event_ids`,
  which also settles the event's webhook-inbox row), so a redelivery or a
  replay after a crash is a ``duplicate`` that changes nothing;
- checks, under that transaction, that the grant is still active and was
  made by this approver (a stranger, or another approver, is refused and the
  refusal audited);
- revokes with a compare-and-set (``WHERE revoked_at IS NULL``) and audits
  ``grant_revoked``, so two taps on one Revoke button revoke once.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import ColumnElement, Connection, and_, func, or_, select, update

from tapgate.gate.models import Grant
from tapgate.store import audit, event_ids
from tapgate.store import engine as _engine
from tapgate.store.rows import grant_from_row
from tapgate.store.schema import grants

__all__ = ["OwnRevoke", "OwnedGrants", "RevokeKind"]

RevokeKind = Literal["revoked", "gone", "not_owner", "not_approver", "duplicate"]


@dataclass(frozen=True, kw_only=True, slots=True)
class OwnRevoke:
    """What one revoke from the chat did; ``grant`` as the transaction saw it (if any)."""

    kind: RevokeKind
    grant: Grant | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class _Asked:
    """One revoke as the chat asked for it."""

    grant_id: str
    approver: str | None
    """The approver the platform ids name; ``None`` for a stranger."""
    actor: str
    now: datetime
    event: tuple[str, str] | None
    detail: Mapping[str, Any]
    refuse: str | None
    """Why the surface already refuses it (another workspace), else ``None``."""


def _active(approver: str, now: datetime) -> ColumnElement[bool]:
    return and_(
        grants.c.created_by == approver,
        grants.c.revoked_at.is_(None),
        or_(grants.c.expires_at.is_(None), grants.c.expires_at > now),
        or_(grants.c.uses_left.is_(None), grants.c.uses_left > 0),
    )


def mine(conn: Connection, approver: str, now: datetime, limit: int) -> tuple[list[Grant], int]:
    """Up to ``limit`` of ``approver``'s active grants, newest first, and how many there are."""
    where = _active(approver, now)
    query = select(grants).where(where).order_by(grants.c.created_at.desc()).limit(limit)
    found = [grant_from_row(r) for r in conn.execute(query).mappings()]
    total = conn.execute(select(func.count()).select_from(grants).where(where)).scalar_one()
    return found, int(total)


def revoke(conn: Connection, asked: _Asked) -> OwnRevoke:
    """Revoke ``asked.grant_id`` for its maker, exactly once (see the module docstring)."""
    now = asked.now
    if asked.event is not None and not event_ids.remember(conn, *asked.event, now):
        return OwnRevoke(kind="duplicate")
    row = conn.execute(select(grants).where(grants.c.id == asked.grant_id)).mappings().first()
    grant = grant_from_row(row) if row is not None else None
    if asked.approver is None or asked.refuse is not None:
        _refused(conn, asked, asked.refuse or "not an approver")
        return OwnRevoke(kind="not_approver")
    if grant is None or not grant.active(now):
        return OwnRevoke(kind="gone", grant=grant)
    if grant.created_by != asked.approver:
        _refused(conn, asked, "not the grant's maker")
        return OwnRevoke(kind="not_owner", grant=grant)
    statement = (
        update(grants)
        .where(grants.c.id == grant.id, grants.c.revoked_at.is_(None))
        .values(revoked_at=now, revoked_by=asked.approver)
    )
    if conn.execute(statement).rowcount != 1:  # cannot happen inside this transaction
        return OwnRevoke(kind="gone", grant=grant)
    detail = {**asked.detail, "grant": grant.id, "tool": grant.tool}
    audit.write(conn, now, "grant_revoked", grant.request_id, asked.approver, detail)
    revoked = dataclasses.replace(grant, revoked_at=now, revoked_by=asked.approver)
    return OwnRevoke(kind="revoked", grant=revoked)


def _refused(conn: Connection, asked: _Asked, why: str) -> None:
    detail = {**asked.detail, "grant": asked.grant_id, "wanted": "revoke", "why": why}
    audit.write(conn, asked.now, "refused", None, asked.actor, detail)


class OwnedGrants:
    """``store.owned_grants``: an approver's grants, listed and revoked from the chat."""

    def __init__(self, runner: _engine.Runner) -> None:
        self.runner = runner

    async def mine(self, approver: str, *, now: datetime, limit: int) -> tuple[list[Grant], int]:
        """Up to ``limit`` of ``approver``'s active grants, newest first, and their count."""
        return await self.runner.read(lambda c: mine(c, approver, now, limit))

    async def revoke(
        self,
        grant_id: str,
        *,
        approver: str | None,
        actor: str,
        now: datetime,
        event: tuple[str, str] | None = None,
        detail: Mapping[str, Any] | None = None,
        refuse: str | None = None,
    ) -> OwnRevoke:
        """Revoke ``grant_id`` as ``approver`` in one transaction (see the module docstring)."""
        asked = _Asked(
            grant_id=grant_id,
            approver=approver,
            actor=actor,
            now=now,
            event=event,
            detail=detail or {},
            refuse=refuse,
        )
        return await self.runner.run(lambda c: revoke(c, asked))
