"""The web inbox's sign-in links and sessions in the store (migration 0007).

Only SHA-256 digests of the secrets are stored: a read of the database (a
backup, a replica) hands out neither a working link nor a working cookie.
A link is used by ONE compare-and-set (``used_at IS NULL AND expires_at >
now``) in the same transaction that creates the session, so two browsers
racing with one link cannot both get in. What a link or a session *means*
(who may mint one, how long they live) is :mod:`tapgate.decisions.sign_in`.

Who got into the inbox, and when, is in the audit log, written in the same
transaction as the change it records (request id null): a link issued
(``inbox_link_issued``), exchanged for a session (``inbox_signed_in``), a
real link refused because it was used or had expired
(``inbox_sign_in_refused``: a replay, or a slow tap), a session revoked or
signed out (``inbox_session_revoked``). A token that matches no link writes
nothing: anyone can send one, and the log is append-only.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, RowMapping, delete, insert, or_, select, update

from tapgate.store import engine as _engine
from tapgate.store.audit import write as write_audit
from tapgate.store.requests import storable_id
from tapgate.store.schema import web_sessions, web_sign_ins

__all__ = ["NewSession", "WebSession", "WebSessions"]


@dataclass(frozen=True, kw_only=True, slots=True)
class WebSession:
    """One signed-in browser: whose, its CSRF token, since when, until when."""

    id: str
    approver: str
    csrf: str
    via: str
    user_agent: str
    created_at: datetime
    expires_at: datetime
    revoked_at: datetime | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class NewSession:
    """The session a link is exchanged for (hashes already made by the caller)."""

    id: str
    secret_hash: str
    csrf: str
    user_agent: str
    expires_at: datetime


class WebSessions:
    """The ``web_sign_ins`` and ``web_sessions`` tables."""

    def __init__(self, runner: _engine.Runner) -> None:
        self.runner = runner

    async def add_link(
        self, token_hash: str, *, approver: str, via: str, now: datetime, expires_at: datetime
    ) -> None:
        """Store a new link's digest, bound to ``approver``."""
        row = {
            "token_hash": token_hash,
            "approver": approver,
            "via": via,
            "created_at": now,
            "expires_at": expires_at,
        }

        def run(conn: Connection) -> None:
            conn.execute(insert(web_sign_ins).values(**row))
            write_audit(conn, now, "inbox_link_issued", None, approver, {"via": via})

        await self.runner.run(run)

    async def link_owner(self, token_hash: str, now: datetime) -> str | None:
        """The approver of an unused, unexpired link; ``None`` otherwise.

        A real link that was used or has expired is refused here too (the page
        a browser opens before the exchange), with its audit line.
        """

        def run(conn: Connection) -> str | None:
            query = select(
                web_sign_ins.c.approver, web_sign_ins.c.used_at, web_sign_ins.c.expires_at
            ).where(web_sign_ins.c.token_hash == token_hash)
            link = conn.execute(query).first()
            if link is None:
                return None  # not a link: nothing worth a line in an append-only log
            if link.used_at is None and link.expires_at > now:
                return str(link.approver)
            _refused(conn, now, link.approver, used=link.used_at is not None)
            return None

        return await self.runner.run(run)

    async def exchange(self, token_hash: str, new: NewSession, now: datetime) -> WebSession | None:
        """Use the link (compare-and-set) and open ``new`` for its approver, in ONE transaction.

        ``None`` when the link is unknown, used or expired: nothing is written.
        """

        def run(conn: Connection) -> WebSession | None:
            link = conn.execute(
                select(
                    web_sign_ins.c.approver,
                    web_sign_ins.c.via,
                    web_sign_ins.c.used_at,
                ).where(web_sign_ins.c.token_hash == token_hash)
            ).first()
            used = conn.execute(
                update(web_sign_ins)
                .where(
                    web_sign_ins.c.token_hash == token_hash,
                    web_sign_ins.c.used_at.is_(None),
                    web_sign_ins.c.expires_at > now,
                )
                .values(used_at=now)
            )
            if link is None:
                return None  # not a link: nothing worth a line in an append-only log
            if used.rowcount != 1:
                _refused(conn, now, link.approver, used=link.used_at is not None)
                return None
            row = {
                "id": new.id,
                "secret_hash": new.secret_hash,
                "approver": link.approver,
                "csrf": new.csrf,
                "via": link.via,
                "user_agent": new.user_agent,
                "created_at": now,
                "expires_at": new.expires_at,
            }
            conn.execute(insert(web_sessions).values(**row))
            detail = {"session": new.id, "via": link.via}
            write_audit(conn, now, "inbox_signed_in", None, link.approver, detail)
            return _session(row)

        return await self.runner.run(run)

    async def session(self, secret_hash: str, now: datetime) -> WebSession | None:
        """The live (unrevoked, unexpired) session behind a cookie's digest, if any."""
        query = select(web_sessions).where(
            web_sessions.c.secret_hash == secret_hash,
            web_sessions.c.revoked_at.is_(None),
            web_sessions.c.expires_at > now,
        )

        def run(conn: Connection) -> WebSession | None:
            row = conn.execute(query).mappings().first()
            return None if row is None else _session(row)

        return await self.runner.read(run)

    async def sessions_of(self, approver: str, now: datetime) -> list[WebSession]:
        """``approver``'s live sessions, newest first."""
        query = (
            select(web_sessions)
            .where(
                web_sessions.c.approver == approver,
                web_sessions.c.revoked_at.is_(None),
                web_sessions.c.expires_at > now,
            )
            .order_by(web_sessions.c.created_at.desc(), web_sessions.c.id)
        )
        return await self.runner.read(lambda c: [_session(r) for r in c.execute(query).mappings()])

    async def revoke(self, session_id: str, *, approver: str, now: datetime) -> bool:
        """End ``approver``'s session ``session_id``; False if not theirs or already ended."""
        if not storable_id(session_id):
            return False  # from the URL: PostgreSQL would refuse the NUL (a 500)
        statement = (
            update(web_sessions)
            .where(
                web_sessions.c.id == session_id,
                web_sessions.c.approver == approver,
                web_sessions.c.revoked_at.is_(None),
            )
            .values(revoked_at=now)
        )

        def run(conn: Connection) -> bool:
            if conn.execute(statement).rowcount != 1:
                return False
            write_audit(conn, now, "inbox_session_revoked", None, approver, {"session": session_id})
            return True

        return await self.runner.run(run)

    async def forget(self, before: datetime) -> int:
        """Drop links and sessions that ended before ``before``; how many rows."""

        def run(conn: Connection) -> int:
            links = conn.execute(delete(web_sign_ins).where(web_sign_ins.c.expires_at < before))
            ended = or_(web_sessions.c.expires_at < before, web_sessions.c.revoked_at < before)
            sessions = conn.execute(delete(web_sessions).where(ended))
            return int(links.rowcount + sessions.rowcount)

        return await self.runner.run(run)


def _refused(conn: Connection, now: datetime, approver: str, *, used: bool) -> None:
    why = "used" if used else "expired"
    write_audit(conn, now, "inbox_sign_in_refused", None, approver, {"why": why})


def _session(row: RowMapping | dict[str, object]) -> WebSession:
    return WebSession(
        id=str(row["id"]),
        approver=str(row["approver"]),
        csrf=str(row["csrf"]),
        via=str(row["via"]),
        user_agent=str(row["user_agent"]),
        created_at=row["created_at"],  # type: ignore[arg-type]
        expires_at=row["expires_at"],  # type: ignore[arg-type]
        revoked_at=row.get("revoked_at"),  # type: ignore[arg-type]
    )
