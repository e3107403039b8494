"""Grants in the store: "allow for this session" and "always", found, made and revoked.

A grant lets a later call with the same agent, tool and argument fingerprint
through without asking. It is looked up in the transaction that would
otherwise create a request (see :mod:`tapgate.core.store.lifecycle`), and a
grant an approval makes commits with that approval, so it exists exactly when
the approval does. Making and revoking a grant are audited here, in the same
transaction; expiry needs no write (``expires_at`` is part of the lookup).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, and_, bindparam, insert, or_, select, update

from tapgate.core.models import Grant
from tapgate.core.store import audit
from tapgate.core.store.rows import grant_from_row, grant_to_row
from tapgate.core.store.schema import UTCDateTime, grants

__all__ = ["GrantKey", "add", "find", "newest_first", "revoke"]


@dataclass(frozen=True, kw_only=True, slots=True)
class GrantKey:
    """What a grant must match to cover a call."""

    agent: str
    session: str | None
    tool: str
    fingerprint: str


_INSERT = insert(grants)
_SELECT_COVERING = (
    select(grants)
    .where(
        grants.c.agent == bindparam("b_agent"),
        grants.c.tool == bindparam("b_tool"),
        grants.c.fingerprint == bindparam("b_fingerprint"),
        grants.c.revoked_at.is_(None),
        or_(
            grants.c.expires_at.is_(None),
            grants.c.expires_at > bindparam("b_now", type_=UTCDateTime),
        ),
        or_(
            grants.c.scope == "always",
            and_(
                grants.c.scope == "session",
                grants.c.session == bindparam("b_session"),
                grants.c.session != "",
            ),
        ),
    )
    .limit(1)
)


def find(conn: Connection, key: GrantKey, now: datetime) -> Grant | None:
    """An active grant covering ``key``: durable, or for this very (non-empty) session."""
    params = {
        "b_agent": key.agent,
        "b_tool": key.tool,
        "b_fingerprint": key.fingerprint,
        "b_now": now,
        "b_session": key.session or "",
    }
    row = conn.execute(_SELECT_COVERING, params).mappings().first()
    return grant_from_row(row) if row is not None else None


def add(conn: Connection, grant: Grant, *, request_id: str, by: str, now: datetime) -> None:
    """Insert ``grant``, made by ``by`` deciding ``request_id``, and audit it."""
    conn.execute(_INSERT, grant_to_row(grant))
    detail = {"grant": grant.id, "scope": grant.scope, "tool": grant.tool}
    audit.write(conn, now, "grant", request_id, by, detail)


def newest_first(conn: Connection) -> list[Grant]:
    """Every grant, active or not, newest first."""
    query = select(grants).order_by(grants.c.created_at.desc())
    return [grant_from_row(r) for r in conn.execute(query).mappings()]


def revoke(conn: Connection, grant_id: str, *, by: str, now: datetime) -> bool:
    """Revoke an active grant and audit it; ``False`` when there was none to revoke."""
    statement = (
        update(grants)
        .where(grants.c.id == grant_id, grants.c.revoked_at.is_(None))
        .values(revoked_at=now, revoked_by=by)
    )
    changed = bool(conn.execute(statement).rowcount)
    if changed:
        audit.write(conn, now, "grant_revoked", None, by, {"grant": grant_id})
    return changed
