"""The audit log: lines the store writes itself, and reading the log back.

The database writes the audit line of every request creation and status
change (triggers, see the migrations) and refuses ``UPDATE`` and ``DELETE`` on
the table. What no trigger can see is written here, in the transaction of the
change it explains: a refused decision and why, a grant made or revoked, an
operator's note. Kept apart from the lifecycle so every writer of an audit
line shares one helper and one column order.

:class:`AuditLog` is the log as :class:`~tapgate.store.store.Store`'s
methods (``Store`` inherits it): a line on its own, the log read back, paged
as hashed, and verified. Reading the chain a page per transaction is more
than one delegating line, so it lives here, with the reads it pages over.
"""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator, Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Select, insert, select

from tapgate.gate.models import AuditEntry
from tapgate.store import engine as _engine
from tapgate.store.audit_chain import ChainRow, ChainVerdict, Verifier, canonical_time
from tapgate.store.rows import audit_from_row
from tapgate.store.schema import audit

__all__ = ["AuditLog", "read", "read_chain", "write"]

_INSERT = insert(audit)


def write(  # noqa: PLR0917 - the six columns of an audit line, always in this order
    conn: Connection,
    now: datetime,
    event: str,
    request_id: str | None,
    actor: str,
    detail: dict[str, Any],
) -> None:
    """Append one line; ``detail`` is stored as sorted JSON (anything else as ``str``)."""
    conn.execute(
        _INSERT,
        {
            "at": now,
            "event": event,
            "request_id": request_id,
            "actor": actor,
            "detail": json.dumps(detail, default=str, sort_keys=True),
        },
    )


def read(
    conn: Connection,
    *,
    since: datetime | None,
    request_id: str | None,
    limit: int | None,
) -> list[AuditEntry]:
    """Lines in the order they were written, optionally from ``since`` or of one request."""
    query = _select(since=since, request_id=request_id, limit=limit)
    return [audit_from_row(r) for r in conn.execute(query).mappings()]


def read_chain(
    conn: Connection,
    *,
    after: int,
    limit: int,
    since: datetime | None = None,
    request_id: str | None = None,
) -> list[ChainRow]:
    """Up to ``limit`` lines with ids above ``after``, as hashed: one page of the chain."""
    query = _select(since=since, request_id=request_id, limit=limit).where(audit.c.id > after)
    return [
        ChainRow(
            id=r["id"],
            at=canonical_time(r["at"]),
            event=r["event"],
            request_id=r["request_id"],
            actor=r["actor"],
            detail=r["detail"],
            prev_hash=r["prev_hash"],
            hash=r["hash"],
        )
        for r in conn.execute(query).mappings()
    ]


def _select(*, since: datetime | None, request_id: str | None, limit: int | None) -> Select[Any]:
    query = select(audit).order_by(audit.c.id)
    if since is not None:
        query = query.where(audit.c.at >= since)
    if request_id is not None:
        query = query.where(audit.c.request_id == request_id)
    if limit is not None:
        query = query.limit(limit)
    return query


class AuditLog:
    """The audit log's methods of :class:`~tapgate.store.store.Store`: append, read, verify."""

    runner: _engine.Runner

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
        await self.runner.run(lambda c: write(c, now, event, request_id, actor, detail or {}))

    async def audit_log(
        self,
        *,
        since: datetime | None = None,
        request_id: str | None = None,
        limit: int | None = None,
    ) -> list[AuditEntry]:
        """Audit lines in the order they were written."""
        return await self.runner.read(
            lambda c: read(c, since=since, request_id=request_id, limit=limit)
        )

    async def audit_chain(
        self,
        *,
        since: datetime | None = None,
        request_id: str | None = None,
        page: int = 1000,
    ) -> AsyncIterator[ChainRow]:
        """Audit lines as hashed, in id order, a page per read so a long log never piles up.

        Ids are handed out in commit order (see migration 0003), so a page
        read while others append misses nothing that a later page could hold.
        """
        after = 0
        while True:
            read_page = functools.partial(
                read_chain, after=after, limit=page, since=since, request_id=request_id
            )
            rows = await self.runner.read(read_page)
            for row in rows:
                yield row
            if len(rows) < page:
                return
            after = rows[-1].id

    async def verify_audit(self, *, anchors: Mapping[int, str] | None = None) -> ChainVerdict:
        """Check the whole chain from its genesis; the verdict names the first broken link."""
        verifier = Verifier(require_genesis=True, anchors=anchors or {})
        async for row in self.audit_chain():
            if not verifier.feed(row):
                break
        return verifier.verdict()
