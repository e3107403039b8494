"""The durable store: requests, their lifecycle, grants and the audit log.

Every status change is a compare-and-set in SQL
(``UPDATE … WHERE status = 'pending' AND expires_at > :now``), so the database,
not the timing of coroutines or replicas, decides which of many taps wins; the
change and its audit line commit in one transaction. A decision arriving after
``expires_at`` is refused even when no sweep has run yet: it expires the
request itself. Outbox rows are left as they are when a request is decided:
the dispatcher sends only rows whose request is still pending (one UPDATE less
on the hot path). Each public method is one transaction (see
:mod:`tapgate.core.store.engine` for how it is run).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, TypeVar

from sqlalchemy import (
    Connection,
    String,
    and_,
    bindparam,
    cast,
    delete,
    exists,
    func,
    insert,
    literal,
    or_,
    select,
    text,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.exc import IntegrityError

from tapgate.core.models import AuditEntry, Delivery, Grant, Request, RequestStatus, Scope
from tapgate.core.store import engine as _engine
from tapgate.core.store.calls import ClientCalls
from tapgate.core.store.leader import Leadership
from tapgate.core.store.notify import DecisionListener
from tapgate.core.store.outbox import Outbox
from tapgate.core.store.prepared import Prepared
from tapgate.core.store.rows import (
    audit_from_row,
    grant_from_row,
    grant_to_row,
    request_from_row,
    request_to_row,
)
from tapgate.core.store.schema import UTCDateTime, audit, grants, outbox, requests, webhook_events
from tapgate.errors import RequestNotFound, StoreError

__all__ = ["Created", "GrantKey", "Store", "Transition"]

T = TypeVar("T")

# Statements are built once and executed with parameters: building
# ``insert(t).values({...})`` per call costs more than running it on SQLite.
# An identical pending request is reused: the partial unique index decides.
_PENDING_CALL: dict[str, Any] = {
    "index_elements": ["agent", "session", "tool", "args_digest"],
    # A literal predicate: PostgreSQL infers the partial index from it even in a
    # generic (cached) plan, where a bound parameter would no longer match.
    "index_where": text("status = 'pending'"),
}
_INSERT_REQUEST = {
    "sqlite": sqlite.insert(requests).on_conflict_do_nothing(**_PENDING_CALL),
    "postgresql": postgresql.insert(requests).on_conflict_do_nothing(**_PENDING_CALL),
}
_INSERT_OUTBOX = insert(outbox)
_INSERT_GRANT = insert(grants)
_INSERT_EVENT = {
    "sqlite": sqlite.insert(webhook_events).on_conflict_do_nothing(),
    "postgresql": postgresql.insert(webhook_events).on_conflict_do_nothing(),
}
_INSERT_AUDIT = insert(audit)
_SELECT_REQUEST = select(requests).where(requests.c.id == bindparam("b_id"))
_SELECT_PENDING_SAME = select(requests).where(
    requests.c.agent == bindparam("b_agent"),
    requests.c.session == bindparam("b_session"),
    requests.c.tool == bindparam("b_tool"),
    requests.c.args_digest == bindparam("b_digest"),
    requests.c.status == "pending",
)
_DECIDE = (
    update(requests)
    .where(
        requests.c.id == bindparam("b_id"),
        requests.c.status == "pending",
        requests.c.expires_at > bindparam("b_now", type_=UTCDateTime),
    )
    .values(
        status=bindparam("b_status"),
        resolved_at=bindparam("b_now", type_=UTCDateTime),
        resolved_by=bindparam("b_by"),
        resolution_reason=bindparam("b_reason"),
        resolution_detail=bindparam("b_detail"),
        scope=bindparam("b_scope"),
    )
    .returning(*requests.c)
)
# The tapper must be one of the request's approvers: checked in the same UPDATE,
# as an exact, case-sensitive match of one element of the JSON list. (A LIKE on
# the JSON text was not: SQLite's LIKE ignores ASCII case, so "alice" could decide
# for "Alice", and a name with a quote in it could match inside another.)
_APPROVERS = func.json_each(requests.c.approvers).table_valued("value")
_DECIDE_AS_APPROVER = {
    "sqlite": _DECIDE.where(exists().where(_APPROVERS.c.value == bindparam("b_approver"))),
    "postgresql": _DECIDE.where(
        cast(requests.c.approvers, JSONB).op("?")(bindparam("b_approver", type_=String))
    ),
}
# A tap's transaction runs on every tap: these skip SQLAlchemy's per-call work (see prepared).
_REMEMBER_EVENT = {name: Prepared(statement) for name, statement in _INSERT_EVENT.items()}
_DECIDE_PREPARED = Prepared(_DECIDE)
_DECIDE_AS_APPROVER_PREPARED = {
    name: Prepared(statement) for name, statement in _DECIDE_AS_APPROVER.items()
}
_SELECT_GRANT = (
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

Outcome = Literal["applied", "expired", "refused", "unauthorized", "missing", "duplicate"]
TargetStatus = Literal["approved", "denied", "cancelled"]


@dataclass(frozen=True, kw_only=True, slots=True)
class Created:
    """The result of asking: a covering grant, or the request and whether it is new.

    ``grant`` is set (and ``request`` is ``None``) when an active grant covers
    the call. ``expired`` lists an identical request found overdue and expired
    on the way, so the caller can announce it.
    """

    request: Request | None
    created: bool
    grant: Grant | None = None
    expired: tuple[Request, ...] = ()


@dataclass(frozen=True, kw_only=True, slots=True)
class GrantKey:
    """What a grant must match to cover a call."""

    agent: str
    session: str | None
    tool: str
    fingerprint: str


@dataclass(frozen=True, kw_only=True, slots=True)
class Transition:
    """What a resolve or cancel did.

    ``applied``: this call decided the request. ``expired``: the request was
    overdue and this call expired it instead. ``refused``: it was already final.
    ``unauthorized``: ``by`` is not among the request's approvers.
    ``missing``: there is no such request. ``duplicate``: the platform event
    that carried this decision was handled before (a redelivery): nothing was
    done. Every outcome but ``missing`` and ``duplicate`` is audited.
    """

    request: Request | None
    outcome: Outcome


class Store:
    """Async access to tapgate's tables; one instance per process, shared by all tasks."""

    def __init__(self, runner: _engine.Runner) -> None:
        self.runner = runner
        self.outbox = Outbox(runner)
        self.calls = ClientCalls(runner)

    @classmethod
    async def open(cls, url: str, *, migrate: bool = True) -> Store:
        """Connect to ``url`` (``sqlite:///…`` or ``postgresql://…``), migrating by default."""
        runner = _engine.connect(url)
        try:
            if migrate:
                await runner.run(_engine.upgrade)
        except Exception:
            await runner.close()
            raise
        return cls(runner)

    async def close(self) -> None:
        """Close every pooled connection."""
        await self.runner.close()

    async def __aenter__(self) -> Store:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def decision_listener(
        self, on_decided: Callable[[str], None], on_connected: Callable[[], Awaitable[Any]]
    ) -> DecisionListener | None:
        """A listener for decisions made by other replicas (PostgreSQL), else ``None``."""
        if isinstance(self.runner, _engine.AsyncRunner) and self.dialect == "postgresql":
            return DecisionListener(self.runner.engine, on_decided, on_connected)
        return None

    def leadership(self) -> Leadership | None:
        """Who runs the timed duties among replicas (PostgreSQL); ``None``: always this one."""
        if isinstance(self.runner, _engine.AsyncRunner) and self.dialect == "postgresql":
            return Leadership(self.runner.engine)
        return None

    @property
    def dialect(self) -> str:
        """``sqlite`` or ``postgresql``."""
        return self.runner.dialect

    async def run(self, fn: Callable[[Connection], T]) -> T:
        """Run ``fn(connection)`` in one write transaction (for migrations, tools and tests)."""
        return await self.runner.run(fn)

    async def is_current(self) -> bool:
        """Reachable and migrated to the head revision (for ``/readyz``)."""
        try:
            return await self.runner.read(_engine.current_revision) == _engine.head_revision()
        except Exception:
            return False

    # -- requests -----------------------------------------------------------------

    async def create_request(
        self,
        request: Request,
        deliveries: Sequence[Delivery],
        now: datetime,
        grant_key: GrantKey | None = None,
    ) -> Created:
        """Insert a pending request with its outbox rows, or return the identical pending one.

        "Identical" is same agent, session, tool and argument digest; a unique
        partial index makes the check race-free across tasks and replicas. With
        ``grant_key``, an active grant is looked up first in the same
        transaction (one round trip for the common "ask" path).
        """
        for _ in range(3):
            try:
                return await self.runner.run(
                    lambda c: _create(c, request, deliveries, now, grant_key)
                )
            except IntegrityError:
                continue  # a concurrent identical ask won the insert; reuse it
        raise StoreError("could not create or reuse a pending request")

    async def get_request(self, request_id: str) -> Request:
        """The request with this id; :class:`RequestNotFound` otherwise."""
        found = await self.runner.read(lambda c: _get(c, request_id))
        if found is None:
            raise RequestNotFound(request_id)
        return found

    async def get_requests(self, ids: Iterable[str]) -> list[Request]:
        """The requests among ``ids`` that exist (for the reconciliation sweep)."""
        wanted = list(ids)
        if not wanted:
            return []
        query = select(requests).where(requests.c.id.in_(wanted))
        return await self.runner.read(
            lambda c: [request_from_row(r) for r in c.execute(query).mappings()]
        )

    async def list_requests(
        self,
        *,
        status: RequestStatus | None = None,
        agent: str | None = None,
        tool: str | None = None,
        id_prefix: str | None = None,
        limit: int = 100,
    ) -> list[Request]:
        """Requests, newest first, optionally filtered by status, agent, tool and id prefix.

        ``id_prefix`` is matched with ``LIKE``, which SQLite compares without
        regard to ASCII case: callers that need an exact prefix check it again.
        """
        query = select(requests).order_by(requests.c.created_at.desc()).limit(limit)
        if status is not None:
            query = query.where(requests.c.status == status)
        if agent is not None:
            query = query.where(requests.c.agent == agent)
        if tool is not None:
            query = query.where(requests.c.tool == tool)
        if id_prefix is not None:
            query = query.where(requests.c.id.startswith(id_prefix, autoescape=True))
        return await self.runner.read(
            lambda c: [request_from_row(r) for r in c.execute(query).mappings()]
        )

    async def count_requests(self, *, status: RequestStatus) -> int:
        """How many requests have ``status`` (the pending gauge; an indexed count)."""
        query = select(func.count()).select_from(requests).where(requests.c.status == status)
        return await self.runner.read(lambda c: int(c.execute(query).scalar_one()))

    async def transition(
        self,
        request_id: str,
        *,
        to: TargetStatus,
        by: str,
        now: datetime,
        reason: str | None = None,
        scope: Scope | None = None,
        grant: Callable[[Request], Grant | None] | None = None,
        approver_check: bool = False,
        detail: dict[str, Any] | None = None,
        event: tuple[str, str] | None = None,
    ) -> Transition:
        """Compare-and-set a pending, unexpired request to ``to``; audit either way.

        With ``approver_check``, ``by`` must be one of the request's approvers,
        checked in the same transaction. ``event`` (platform, event id) is
        remembered in the same transaction too, so a redelivered webhook event
        can neither decide twice nor be lost between "seen" and "decided".
        ``grant`` builds the grant this decision
        makes ("allow for session", "always") from the current request; it
        commits with the decision, so it exists exactly when the approval does.
        """
        if reason is not None and "\x00" in reason:
            # An approver's typed answer is stored as text, and PostgreSQL cannot
            # store NUL: shown as U+FFFD on both backends rather than refused.
            reason = reason.replace("\x00", "\ufffd")
        change = _Change(
            request_id=request_id,
            to=to,
            by=by,
            now=now,
            reason=reason,
            scope=scope,
            grant=grant,
            approver_check=approver_check,
            detail=detail or {},
            event=event,
        )
        return await self.runner.run(change)

    async def expire(self, request_id: str, now: datetime) -> Transition:
        """Expire one request if it is pending and overdue (a waiter reaching its deadline)."""

        def run(conn: Connection) -> Transition:
            expired = _expire(conn, [request_id], now)
            if expired:
                return Transition(request=expired[0], outcome="expired")
            current = _get(conn, request_id)
            return Transition(request=current, outcome="refused" if current else "missing")

        return await self.runner.run(run)

    async def expire_overdue(self, now: datetime, limit: int = 500) -> list[Request]:
        """Expire pending requests whose deadline has passed; returns those this call expired."""
        query = (
            select(requests.c.id)
            .where(requests.c.status == "pending", requests.c.expires_at <= now)
            .limit(limit)
        )

        def run(conn: Connection) -> list[Request]:
            ids = list(conn.execute(query).scalars())
            return _expire(conn, ids, now) if ids else []

        return await self.runner.run(run)

    # -- grants ---------------------------------------------------------------------

    async def find_grant(
        self, *, agent: str, session: str | None, tool: str, fingerprint: str, now: datetime
    ) -> Grant | None:
        """An active grant covering this call: durable, or for this very session."""
        key = GrantKey(agent=agent, session=session, tool=tool, fingerprint=fingerprint)
        return await self.runner.read(lambda c: _find_grant(c, key, now))

    async def add_grant(self, grant: Grant) -> None:
        """Record a grant made outside a resolution (operator CLI, tests)."""

        def run(conn: Connection) -> None:
            conn.execute(_INSERT_GRANT, grant_to_row(grant))
            _audit(
                conn,
                grant.created_at,
                "grant",
                grant.request_id,
                grant.created_by,
                {"grant": grant.id, "scope": grant.scope, "tool": grant.tool},
            )

        await self.runner.run(run)

    async def list_grants(self, *, active_at: datetime | None = None) -> list[Grant]:
        """Grants, newest first; only those active at ``active_at`` when given."""
        query = select(grants).order_by(grants.c.created_at.desc())
        found = await self.runner.read(
            lambda c: [grant_from_row(r) for r in c.execute(query).mappings()]
        )
        return [g for g in found if active_at is None or g.active(active_at)]

    async def revoke_grant(self, grant_id: str, *, by: str, now: datetime) -> bool:
        """Revoke an active grant; False when there was none to revoke."""
        statement = (
            update(grants)
            .where(grants.c.id == grant_id, grants.c.revoked_at.is_(None))
            .values(revoked_at=now, revoked_by=by)
        )

        def run(conn: Connection) -> bool:
            changed = bool(conn.execute(statement).rowcount)
            if changed:
                _audit(conn, now, "grant_revoked", None, by, {"grant": grant_id})
            return changed

        return await self.runner.run(run)

    # -- reminders ----------------------------------------------------------------------

    async def due_reminders(self, cutoff: datetime, limit: int = 100) -> list[Request]:
        """Pending requests created before ``cutoff`` that were never reminded about."""
        query = (
            select(requests)
            .where(
                requests.c.status == "pending",
                requests.c.created_at <= cutoff,
                requests.c.reminded_at.is_(None),
            )
            .order_by(requests.c.created_at)
            .limit(limit)
        )
        return await self.runner.read(
            lambda c: [request_from_row(r) for r in c.execute(query).mappings()]
        )

    async def queue_reminder(
        self, request_id: str, deliveries: Sequence[Delivery], now: datetime
    ) -> bool:
        """Queue one reminder per delivery, once per request (compare-and-set on reminded_at).

        Not for a request already past its deadline (the sweep may lag behind
        it): nobody can decide that one any more.
        """
        mark = (
            update(requests)
            .where(
                requests.c.id == request_id,
                requests.c.status == "pending",
                requests.c.expires_at > now,
                requests.c.reminded_at.is_(None),
            )
            .values(reminded_at=now)
        )

        def run(conn: Connection) -> bool:
            if conn.execute(mark).rowcount != 1:
                return False
            if deliveries:
                rows = _outbox_rows(request_id, deliveries, now)
                conn.execute(_INSERT_OUTBOX, [{**r, "kind": "reminder"} for r in rows])
            return True

        return await self.runner.run(run)

    # -- webhook events ----------------------------------------------------------------

    async def remember_event(self, source: str, event_id: str, now: datetime) -> bool:
        """Record a platform event id; False if it was seen before (a redelivery)."""
        statement = _INSERT_EVENT[self.dialect]
        params = {"source": source, "event_id": event_id, "received_at": now}
        return await self.runner.run(lambda c: c.execute(statement, params).rowcount == 1)

    async def forget_events(self, before: datetime) -> int:
        """Drop event ids older than ``before`` (platforms stop redelivering long before)."""
        statement = delete(webhook_events).where(webhook_events.c.received_at < before)
        return await self.runner.run(lambda c: c.execute(statement).rowcount)

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
        await self.runner.run(lambda c: _audit(c, now, event, request_id, actor, detail or {}))

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
        return await self.runner.read(
            lambda c: [audit_from_row(r) for r in c.execute(query).mappings()]
        )


@dataclass(frozen=True, kw_only=True, slots=True)
class _Change:
    """One resolve or cancel, run as a single transaction."""

    request_id: str
    to: TargetStatus
    by: str
    now: datetime
    reason: str | None
    scope: Scope | None
    grant: Callable[[Request], Grant | None] | None
    approver_check: bool
    detail: dict[str, Any]
    event: tuple[str, str] | None = None

    def __call__(self, conn: Connection) -> Transition:
        if self.event is not None:
            source, event_id = self.event
            seen = {"source": source, "event_id": event_id, "received_at": self.now}
            if _REMEMBER_EVENT[conn.dialect.name].rowcount(conn, seen) != 1:
                return Transition(request=None, outcome="duplicate")
        extra = {"reason": self.reason, "scope": self.scope, **self.detail}
        params = {
            "b_id": self.request_id,
            "b_now": self.now,
            "b_status": self.to,
            "b_by": self.by,
            "b_reason": self.reason,
            "b_scope": self.scope,
            "b_detail": json.dumps(self.detail, sort_keys=True) if self.detail else None,
        }
        statement = _DECIDE_PREPARED
        if self.approver_check:
            statement = _DECIDE_AS_APPROVER_PREPARED[conn.dialect.name]
            params["b_approver"] = self.by
        rows = statement.returning(conn, params)
        if rows:
            decided = request_from_row(rows[0])
            grant = self.grant(decided) if self.grant is not None else None
            if grant is not None:  # the decision itself is audited by a trigger
                conn.execute(_INSERT_GRANT, grant_to_row(grant))
                _audit(
                    conn,
                    self.now,
                    "grant",
                    self.request_id,
                    self.by,
                    {"grant": grant.id, "scope": grant.scope, "tool": grant.tool},
                )
            return Transition(request=decided, outcome="applied")
        return self._not_applied(conn, extra)

    def _not_applied(self, conn: Connection, extra: dict[str, Any]) -> Transition:
        """Why the compare-and-set matched nothing: each reason is audited."""
        current = _get(conn, self.request_id)
        if current is None:
            return Transition(request=None, outcome="missing")
        if self.approver_check and self.by not in current.approvers:
            self._refused(conn, extra, "not an approver")
            return Transition(request=current, outcome="unauthorized")
        if current.status == "pending":  # pending but not updated: overdue
            expired = _expire(conn, [self.request_id], self.now)
            self._refused(conn, extra, "expired")
            return Transition(request=expired[0] if expired else current, outcome="expired")
        by = f" by {current.resolved_by}" if current.resolved_by else ""
        self._refused(conn, extra, f"already {current.status}{by}")
        return Transition(request=current, outcome="refused")

    def _refused(self, conn: Connection, extra: dict[str, Any], why: str) -> None:
        _audit(
            conn,
            self.now,
            "refused",
            self.request_id,
            self.by,
            {**extra, "wanted": self.to, "why": why},
        )


# {"on_timeout": "deny"} built in SQL, so a bulk expiry stays one statement.
_ON_TIMEOUT_DETAIL = literal('{"on_timeout": "') + requests.c.on_timeout + literal('"}')


def _get(conn: Connection, request_id: str) -> Request | None:
    row = conn.execute(_SELECT_REQUEST, {"b_id": request_id}).mappings().first()
    return request_from_row(row) if row is not None else None


def _find_grant(conn: Connection, key: GrantKey, now: datetime) -> Grant | None:
    row = (
        conn.execute(
            _SELECT_GRANT,
            {
                "b_agent": key.agent,
                "b_tool": key.tool,
                "b_fingerprint": key.fingerprint,
                "b_now": now,
                "b_session": key.session or "",
            },
        )
        .mappings()
        .first()
    )
    return grant_from_row(row) if row is not None else None


def _create(
    conn: Connection,
    request: Request,
    deliveries: Sequence[Delivery],
    now: datetime,
    grant_key: GrantKey | None,
) -> Created:
    if grant_key is not None:
        grant = _find_grant(conn, grant_key, now)
        if grant is not None:
            return Created(request=None, created=False, grant=grant)
    row = request_to_row(request)
    insert_request = _INSERT_REQUEST[conn.dialect.name]
    expired: tuple[Request, ...] = ()
    if conn.execute(insert_request, row).rowcount != 1:
        existing = _pending_like(conn, request)
        if existing is not None and existing.expires_at > now:
            return Created(request=existing, created=False)
        if existing is not None:
            expired = tuple(_expire(conn, [existing.id], now))
        if conn.execute(insert_request, row).rowcount != 1:
            raise StoreError("could not create or reuse a pending request")
    if deliveries:  # the "requested" audit line is written by a trigger
        conn.execute(_INSERT_OUTBOX, _outbox_rows(request.id, deliveries, now))
    return Created(request=request, created=True, expired=expired)


def _pending_like(conn: Connection, request: Request) -> Request | None:
    params = {
        "b_agent": request.agent,
        "b_session": request.session or "",
        "b_tool": request.tool,
        "b_digest": request.args_digest,
    }
    row = conn.execute(_SELECT_PENDING_SAME, params).mappings().first()
    return request_from_row(row) if row is not None else None


def _expire(conn: Connection, ids: list[str], now: datetime) -> list[Request]:
    result = conn.execute(
        update(requests)
        .where(requests.c.id.in_(ids), requests.c.status == "pending", requests.c.expires_at <= now)
        .values(
            status="expired",
            resolved_at=now,
            resolved_by="timeout",
            resolution_detail=_ON_TIMEOUT_DETAIL,
        )
        .returning(*requests.c)
    )  # the "expired" audit line is written by a trigger
    return [request_from_row(r) for r in result.mappings()]


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


def _audit(  # noqa: PLR0917 - the six columns of an audit line, always in this order
    conn: Connection,
    now: datetime,
    event: str,
    request_id: str | None,
    actor: str,
    detail: dict[str, Any],
) -> None:
    conn.execute(
        _INSERT_AUDIT,
        {
            "at": now,
            "event": event,
            "request_id": request_id,
            "actor": actor,
            "detail": json.dumps(detail, default=str, sort_keys=True),
        },
    )
