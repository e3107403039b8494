"""Grants in the store: "allow for this session" and "always", found, made and revoked.

A grant lets a later call with the same agent, tool and argument fingerprint
through without asking. It is looked up in the transaction that would
otherwise create a request (see :mod:`tapgate.store.lifecycle`), and a
grant an approval makes commits with that approval, so it exists exactly when
the approval does. Making and revoking a grant are audited here, in the same
transaction; expiry needs no write (``expires_at`` is part of the lookup).

A grant with ``uses_left`` (``always_uses`` in the policy) is spent by the
call it allows: :func:`find` takes one use with a compare-and-set
(``uses_left = uses_left - 1 WHERE uses_left > 0``) in the asking
transaction. On PostgreSQL the second of two concurrent calls waits for the
first's row lock, re-reads ``uses_left`` and finds nothing left, so exactly
one of them is allowed and the other asks; on SQLite writes are serialised.
A grant without a limit is preferred, so a limited one is spent only when
nothing else covers the call.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, and_, bindparam, case, insert, or_, select, update

from tapgate.gate.models import Grant
from tapgate.store import audit
from tapgate.store.rows import grant_from_row, grant_to_row
from tapgate.store.schema import UTCDateTime, grants

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
        or_(grants.c.uses_left.is_(None), grants.c.uses_left > 0),
    )
    .order_by(case((grants.c.uses_left.is_(None), 0), else_=1))
    .limit(1)
)
_TAKE_USE = (
    update(grants)
    .where(
        grants.c.id == bindparam("b_id"),
        grants.c.revoked_at.is_(None),
        grants.c.uses_left > 0,
    )
    .values(uses_left=grants.c.uses_left - 1)
)
_FIND_ATTEMPTS = 3


def find(conn: Connection, key: GrantKey, now: datetime) -> Grant | None:
    """An active grant covering ``key`` (durable, or for this very non-empty session).

    A limited grant found here has one use taken (audited as ``grant_used``):
    finding it *is* the call it allows. A use lost to a concurrent call looks
    again; the grant it lost on has nothing left, so the loop ends.
    """
    params = {
        "b_agent": key.agent,
        "b_tool": key.tool,
        "b_fingerprint": key.fingerprint,
        "b_now": now,
        "b_session": key.session or "",
    }
    for _ in range(_FIND_ATTEMPTS):
        row = conn.execute(_SELECT_COVERING, params).mappings().first()
        if row is None:
            return None
        grant = grant_from_row(row)
        if grant.uses_left is None:
            return grant
        if conn.execute(_TAKE_USE, {"b_id": grant.id}).rowcount == 1:
            left = grant.uses_left - 1
            detail = {"grant": grant.id, "tool": grant.tool, "uses_left": left}
            audit.write(conn, now, "grant_used", None, f"agent:{key.agent}", detail)
            return dataclasses.replace(grant, uses_left=left)
    return None


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
