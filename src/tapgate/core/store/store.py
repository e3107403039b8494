"""The durable store: requests, their lifecycle, grants and the audit log.

Every status change is a compare-and-set in SQL
(``UPDATE … WHERE status = 'pending' AND expires_at > :now``), so the database,
not the timing of coroutines or replicas, decides which of many taps wins; the
change and its audit line commit in one transaction. A decision arriving after
``expires_at`` is refused even when no sweep has run yet: it expires the
request itself.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import and_, insert, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from tapgate.core.models import AuditEntry, Delivery, Grant, Request, RequestStatus, Scope
from tapgate.core.store import engine as _engine
from tapgate.core.store.rows import (
    audit_from_row,
    grant_from_row,
    grant_to_row,
    request_from_row,
    request_to_row,
)
from tapgate.core.store.schema import audit, grants, outbox, requests
from tapgate.errors import RequestNotFound, StoreError

__all__ = ["Created", "Store", "Transition"]

Outcome = Literal["applied", "expired", "refused"]
TargetStatus = Literal["approved", "denied", "cancelled"]


@dataclass(frozen=True, kw_only=True, slots=True)
class Created:
    """The result of asking: the request, whether it is new, and any it displaced.

    ``expired`` lists an identical request found overdue and expired on the way,
    so the caller can announce it.
    """

    request: Request
    created: bool
    expired: tuple[Request, ...] = ()


@dataclass(frozen=True, kw_only=True, slots=True)
class Transition:
    """What a resolve or cancel did.

    ``applied``: this call decided the request. ``expired``: the request was
    overdue and this call expired it instead. ``refused``: it was already final.
    """

    request: Request
    outcome: Outcome


class Store:
    """Async access to tapgate's tables; one instance per process, shared by all tasks."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine

    @classmethod
    async def open(cls, url: str, *, migrate: bool = True) -> Store:
        """Connect to ``url`` (``sqlite:///…`` or ``postgresql://…``), migrating by default."""
        engine = _engine.connect(url)
        try:
            if migrate:
                await _engine.upgrade(engine)
        except Exception:
            await engine.dispose()
            raise
        return cls(engine)

    async def close(self) -> None:
        """Close every pooled connection."""
        await self.engine.dispose()

    async def __aenter__(self) -> Store:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def dialect(self) -> str:
        """``sqlite`` or ``postgresql``."""
        return self.engine.dialect.name

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[AsyncConnection]:
        """One transaction; committed on success, rolled back on error."""
        async with self.engine.begin() as conn:
            yield conn

    async def is_current(self) -> bool:
        """Reachable and migrated to the head revision (for ``/readyz``)."""
        try:
            return await _engine.current_revision(self.engine) == _engine.head_revision()
        except Exception:
            return False

    # -- requests -----------------------------------------------------------------

    async def create_request(
        self, request: Request, deliveries: Sequence[Delivery], now: datetime
    ) -> Created:
        """Insert a pending request with its outbox rows, or return the identical pending one.

        "Identical" is same agent, session, tool and argument digest; a unique
        partial index makes the check race-free across tasks and replicas.
        """
        for _ in range(3):
            try:
                return await self._create_once(request, deliveries, now)
            except IntegrityError:
                continue  # a concurrent identical ask won the insert; reuse it
        raise StoreError("could not create or reuse a pending request")

    async def _create_once(
        self, request: Request, deliveries: Sequence[Delivery], now: datetime
    ) -> Created:
        async with self.transaction() as conn:
            same = and_(
                requests.c.agent == request.agent,
                requests.c.session == (request.session or ""),
                requests.c.tool == request.tool,
                requests.c.args_digest == request.args_digest,
                requests.c.status == "pending",
            )
            row = (await conn.execute(select(requests).where(same))).mappings().first()
            expired: tuple[Request, ...] = ()
            if row is not None:
                existing = request_from_row(row)
                if existing.expires_at > now:
                    return Created(request=existing, created=False)
                expired = tuple(await self._expire(conn, [existing.id], now))
            await conn.execute(insert(requests).values(request_to_row(request)))
            if deliveries:
                await conn.execute(insert(outbox), _outbox_rows(request.id, deliveries, now))
            await _audit(
                conn,
                now,
                "requested",
                request.id,
                request.agent,
                {
                    "tool": request.tool,
                    "rule": request.rule,
                    "approvers": list(request.approvers),
                    "expires_at": request.expires_at.isoformat(),
                },
            )
            return Created(request=request, created=True, expired=expired)

    async def get_request(self, request_id: str) -> Request:
        """The request with this id; :class:`RequestNotFound` otherwise."""
        async with self.engine.connect() as conn:
            row = (
                (await conn.execute(select(requests).where(requests.c.id == request_id)))
                .mappings()
                .first()
            )
        if row is None:
            raise RequestNotFound(request_id)
        return request_from_row(row)

    async def get_requests(self, ids: Iterable[str]) -> list[Request]:
        """The requests among ``ids`` that exist (for the reconciliation sweep)."""
        wanted = list(ids)
        if not wanted:
            return []
        async with self.engine.connect() as conn:
            rows = (
                await conn.execute(select(requests).where(requests.c.id.in_(wanted)))
            ).mappings()
            return [request_from_row(r) for r in rows]

    async def list_requests(
        self,
        *,
        status: RequestStatus | None = None,
        agent: str | None = None,
        limit: int = 100,
    ) -> list[Request]:
        """Requests, newest first, optionally filtered by status and agent."""
        query = select(requests).order_by(requests.c.created_at.desc()).limit(limit)
        if status is not None:
            query = query.where(requests.c.status == status)
        if agent is not None:
            query = query.where(requests.c.agent == agent)
        async with self.engine.connect() as conn:
            return [request_from_row(r) for r in (await conn.execute(query)).mappings()]

    async def transition(
        self,
        request_id: str,
        *,
        to: TargetStatus,
        by: str,
        now: datetime,
        reason: str | None = None,
        scope: Scope | None = None,
        grant: Grant | None = None,
        detail: dict[str, Any] | None = None,
    ) -> Transition:
        """Compare-and-set a pending, unexpired request to ``to``; audit either way.

        A grant made by this decision ("allow for session", "always") commits in
        the same transaction, so it exists exactly when the approval does.
        """
        values = {
            "status": to,
            "resolved_at": now,
            "resolved_by": by,
            "resolution_reason": reason,
            "scope": scope,
        }
        async with self.transaction() as conn:
            result = await conn.execute(
                update(requests)
                .where(
                    requests.c.id == request_id,
                    requests.c.status == "pending",
                    requests.c.expires_at > now,
                )
                .values(values)
                .returning(*requests.c)
            )
            row = result.mappings().first()
            extra = {"reason": reason, "scope": scope, **(detail or {})}
            if row is not None:
                if grant is not None:
                    await conn.execute(insert(grants).values(grant_to_row(grant)))
                    extra["grant"] = grant.id
                await _cancel_outbox(conn, [request_id], now)
                await _audit(conn, now, to, request_id, by, extra)
                return Transition(request=request_from_row(row), outcome="applied")
            return await self._refuse(conn, request_id, to, by, now, extra)

    async def _refuse(
        self,
        conn: AsyncConnection,
        request_id: str,
        to: str,
        by: str,
        now: datetime,
        extra: dict[str, Any],
    ) -> Transition:
        row = (
            (await conn.execute(select(requests).where(requests.c.id == request_id)))
            .mappings()
            .first()
        )
        if row is None:
            await _audit(
                conn,
                now,
                "refused",
                request_id,
                by,
                {**extra, "wanted": to, "why": "no such request"},
            )
            raise RequestNotFound(request_id)
        current = request_from_row(row)
        outcome: Outcome = "refused"
        if current.status == "pending":  # only reachable when overdue
            current = (await self._expire(conn, [request_id], now))[0]
            outcome = "expired"
        why = f"already {current.status}" + (
            f" by {current.resolved_by}" if current.resolved_by and outcome == "refused" else ""
        )
        await _audit(conn, now, "refused", request_id, by, {**extra, "wanted": to, "why": why})
        return Transition(request=current, outcome=outcome)

    async def expire(self, request_id: str, now: datetime) -> Transition:
        """Expire one request if it is pending and overdue (a waiter reaching its deadline)."""
        async with self.transaction() as conn:
            expired = await self._expire(conn, [request_id], now)
            if expired:
                return Transition(request=expired[0], outcome="expired")
            row = (
                (await conn.execute(select(requests).where(requests.c.id == request_id)))
                .mappings()
                .first()
            )
        if row is None:
            raise RequestNotFound(request_id)
        return Transition(request=request_from_row(row), outcome="refused")

    async def expire_overdue(self, now: datetime, limit: int = 500) -> list[Request]:
        """Expire pending requests whose deadline has passed; returns those this call expired."""
        async with self.transaction() as conn:
            ids = (
                (
                    await conn.execute(
                        select(requests.c.id)
                        .where(requests.c.status == "pending", requests.c.expires_at <= now)
                        .limit(limit)
                    )
                )
                .scalars()
                .all()
            )
            return await self._expire(conn, list(ids), now) if ids else []

    async def _expire(self, conn: AsyncConnection, ids: list[str], now: datetime) -> list[Request]:
        result = await conn.execute(
            update(requests)
            .where(
                requests.c.id.in_(ids), requests.c.status == "pending", requests.c.expires_at <= now
            )
            .values(status="expired", resolved_at=now, resolved_by="timeout")
            .returning(*requests.c)
        )
        expired = [request_from_row(r) for r in result.mappings()]
        if expired:
            await _cancel_outbox(conn, [r.id for r in expired], now)
            for r in expired:
                await _audit(conn, now, "expired", r.id, "timeout", {"on_timeout": r.on_timeout})
        return expired

    # -- grants ---------------------------------------------------------------------

    async def find_grant(
        self, *, agent: str, session: str | None, tool: str, fingerprint: str, now: datetime
    ) -> Grant | None:
        """An active grant covering this call: durable, or for this very session."""
        scope_match = grants.c.scope == "always"
        if session:
            scope_match = or_(
                scope_match, and_(grants.c.scope == "session", grants.c.session == session)
            )
        query = (
            select(grants)
            .where(
                grants.c.agent == agent,
                grants.c.tool == tool,
                grants.c.fingerprint == fingerprint,
                grants.c.revoked_at.is_(None),
                or_(grants.c.expires_at.is_(None), grants.c.expires_at > now),
                scope_match,
            )
            .limit(1)
        )
        async with self.engine.connect() as conn:
            row = (await conn.execute(query)).mappings().first()
        return grant_from_row(row) if row is not None else None

    async def add_grant(self, grant: Grant) -> None:
        """Record a grant made outside a resolution (operator CLI, tests)."""
        async with self.transaction() as conn:
            await conn.execute(insert(grants).values(grant_to_row(grant)))
            await _audit(
                conn,
                grant.created_at,
                "grant",
                grant.request_id,
                grant.created_by,
                {"grant": grant.id, "scope": grant.scope, "tool": grant.tool},
            )

    async def list_grants(self, *, active_at: datetime | None = None) -> list[Grant]:
        """Grants, newest first; only those active at ``active_at`` when given."""
        query = select(grants).order_by(grants.c.created_at.desc())
        async with self.engine.connect() as conn:
            found = [grant_from_row(r) for r in (await conn.execute(query)).mappings()]
        return [g for g in found if active_at is None or g.active(active_at)]

    async def revoke_grant(self, grant_id: str, *, by: str, now: datetime) -> bool:
        """Revoke an active grant; False when there was none to revoke."""
        async with self.transaction() as conn:
            result = await conn.execute(
                update(grants)
                .where(grants.c.id == grant_id, grants.c.revoked_at.is_(None))
                .values(revoked_at=now, revoked_by=by)
            )
            if result.rowcount:
                await _audit(conn, now, "grant_revoked", None, by, {"grant": grant_id})
            return bool(result.rowcount)

    # -- audit ----------------------------------------------------------------------

    async def record(
        self,
        event: str,
        *,
        request_id: str | None,
        actor: str,
        now: datetime,
        detail: dict[str, Any] | None = None,
    ) -> None:
        """Append an audit line on its own (a refused tap, a break-glass note)."""
        async with self.transaction() as conn:
            await _audit(conn, now, event, request_id, actor, detail or {})

    async def audit_log(
        self,
        *,
        since: datetime | None = None,
        request_id: str | None = None,
        limit: int | None = None,
    ) -> list[AuditEntry]:
        """Audit lines in the order they were written."""
        query = select(audit).order_by(audit.c.id)
        if since is not None:
            query = query.where(audit.c.at >= since)
        if request_id is not None:
            query = query.where(audit.c.request_id == request_id)
        if limit is not None:
            query = query.limit(limit)
        async with self.engine.connect() as conn:
            return [audit_from_row(r) for r in (await conn.execute(query)).mappings()]


def _outbox_rows(
    request_id: str, deliveries: Sequence[Delivery], now: datetime
) -> list[dict[str, Any]]:
    return [
        {
            "request_id": request_id,
            "approver": d.approver,
            "channel": d.channel,
            "address": d.address,
            "kind": "request",
            "status": "pending",
            "attempts": 0,
            "next_attempt_at": now,
            "retry_key": str(uuid.uuid4()),
            "created_at": now,
            "updated_at": now,
        }
        for d in deliveries
    ]


async def _cancel_outbox(conn: AsyncConnection, request_ids: list[str], now: datetime) -> None:
    """A decided request needs no more first messages (updates are queued separately)."""
    await conn.execute(
        update(outbox)
        .where(
            outbox.c.request_id.in_(request_ids),
            outbox.c.status == "pending",
            outbox.c.kind == "request",
        )
        .values(status="cancelled", updated_at=now, lease_until=None)
    )


async def _audit(
    conn: AsyncConnection,
    now: datetime,
    event: str,
    request_id: str | None,
    actor: str,
    detail: dict[str, Any],
) -> None:
    await conn.execute(
        insert(audit).values(
            at=now,
            event=event,
            request_id=request_id,
            actor=actor,
            detail=json.dumps(detail, default=str, sort_keys=True),
        )
    )
