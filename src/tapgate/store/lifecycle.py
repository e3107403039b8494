"""A request's lifecycle: created pending, then approved, denied, cancelled or expired once.

Every status change is a compare-and-set in SQL
(``UPDATE … WHERE status = 'pending' AND expires_at > :now``), so the database,
not the timing of coroutines or replicas, decides which of many taps wins; the
change and its audit line commit in one transaction (the trigger writes the
line of a change, :mod:`~tapgate.store.audit` the line of a refusal). A
decision arriving after ``expires_at`` is refused even when no sweep has run
yet: it expires the request itself. Outbox rows are left as they are when a
request is decided: the dispatcher sends only rows whose request is still
pending (one UPDATE less on the hot path).

Creation lives here too, because asking can end an old life: an identical
pending request is reused, an overdue one expired on the way. An identical
call asked after a decision finds it (decision 0012-an-approval-authorises-one-execution): an
unconsumed
once-approval is consumed by it (one execution per approval), and a live
denial answers it again, so re-issuing a denied call pings nobody.

Every decision is numbered (``decided_seq``) for the agents' decided-since
cursor, from the one-row ``decision_seq`` table bumped in the deciding
transaction: on PostgreSQL the bump holds the row's lock until commit, so
numbers follow commit order and a reader that saw n never later finds a
smaller one. The decisions of one transaction (a bulk expiry, an "Approve
all") share one number (the cursor orders by number, then id).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import (
    Connection,
    String,
    bindparam,
    cast,
    exists,
    func,
    select,
    text,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.dialects.postgresql import JSONB

from tapgate.errors import StoreError
from tapgate.gate.models import Delivery, Grant, Request, Scope, args_digest, canonical_json
from tapgate.policy.limits import NO_LIMITS, AgentLimits
from tapgate.store import audit, event_ids, grants, numbering, outbox
from tapgate.store import requests as _requests
from tapgate.store.expiry import expire
from tapgate.store.grants import GrantKey
from tapgate.store.prepared import Prepared
from tapgate.store.rows import request_from_row, request_to_row
from tapgate.store.schema import UTCDateTime, requests

__all__ = [
    "Change",
    "Created",
    "Outcome",
    "TargetStatus",
    "Transition",
    "consume",
    "create",
    "expire",
    "expire_one",
]

Outcome = Literal[
    "applied",
    "expired",
    "final",
    "unauthorized",
    "missing",
    "duplicate",
    "self_approval",
    "short_of_quorum",
    "partial",
    "counted",
]
TargetStatus = Literal["approved", "denied", "cancelled"]


@dataclass(frozen=True, kw_only=True, slots=True)
class Created:
    """The result of asking: a covering grant, or the request and whether it is new.

    ``grant`` is set (``request`` ``None``) when an active grant covers the call;
    ``expired`` lists an identical request expired on the way, to announce.
    """

    request: Request | None
    created: bool
    grant: Grant | None = None
    expired: tuple[Request, ...] = ()
    earlier: Request | None = None
    """An identical call's earlier decision that answers this ask: an approval it
    just consumed, or a denial still within its request's life."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Transition:
    """What a resolve or cancel did.

    ``applied``: this call decided the request. ``expired``: the request was
    overdue and this call expired it instead. ``final``: it was already
    decided, cancelled or expired. ``unauthorized``: ``by`` is not among the
    request's approvers. ``missing``: there is no such request.
    ``duplicate``: the platform event that carried this decision was handled
    before (a redelivery): nothing was done. ``self_approval``: ``by`` owns
    the agent and may not approve its calls; ``short_of_quorum``: an approval
    that does not complete the quorum (:mod:`~tapgate.store.approvals`
    counts those: ``partial`` counted it, ``counted`` had counted it before).
    Every outcome but ``duplicate`` is audited (a refusal as the audit event
    ``refused``, a ``partial`` approval as ``approval``; ``missing`` names the
    id it was asked for, in the detail too when no request id can hold it).
    """

    request: Request | None
    outcome: Outcome


_ID_MAX = 32
"""The audit's ``request_id`` column holds tapgate's ids (22 characters) and no longer."""

# Statements built once (building one per call costs more than running it on
# SQLite). An identical pending request is reused: the partial unique index decides.
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
_SELECT_PENDING_SAME = select(requests).where(
    requests.c.agent == bindparam("b_agent"),
    requests.c.session == bindparam("b_session"),
    requests.c.tool == bindparam("b_tool"),
    requests.c.args_digest == bindparam("b_digest"),
    requests.c.status == "pending",
)
_SELECT_DECIDED_SAME = (
    select(requests)
    .where(
        requests.c.agent == bindparam("b_agent"),
        requests.c.tool == bindparam("b_tool"),
        # an edited approval's digest is the edited call's: it covers nothing else
        requests.c.args_digest == bindparam("b_digest"),
        requests.c.session == bindparam("b_session"),
        (
            (requests.c.status == "approved")
            & (requests.c.scope == "once")
            & requests.c.consumed_at.is_(None)
        )
        | ((requests.c.status == "denied") & (requests.c.expires_at > bindparam("b_now"))),
    )
    .order_by(requests.c.resolved_at.desc())
    .limit(1)
)
_CONSUME = (
    update(requests)
    .where(
        requests.c.id == bindparam("b_id"),
        requests.c.status == "approved",
        requests.c.scope == "once",
        requests.c.consumed_at.is_(None),
    )
    .values(consumed_at=bindparam("b_now", type_=UTCDateTime))
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
        decided_seq=numbering.SEQ,
        # An edited approval covers the edited call: its digest is what a re-issue
        # must match to use it (``arguments`` stay the proposal, for the record).
        edited_arguments=bindparam("b_edited"),
        args_digest=func.coalesce(
            bindparam("b_edited_digest", type_=String), requests.c.args_digest
        ),
    )
    .returning(*requests.c)
)
# The tapper must be one of the request's approvers: checked in the same UPDATE, as
# an exact, case-sensitive match of one element of the JSON list. (A LIKE on the JSON
# text was not: SQLite's LIKE ignores ASCII case, so "alice" could decide for "Alice",
# and a name with a quote in it could match inside another.)
_APPROVERS = func.json_each(requests.c.approvers).table_valued("value")
_DECIDE_AS_APPROVER = {
    "sqlite": _DECIDE.where(exists().where(_APPROVERS.c.value == bindparam("b_approver"))),
    "postgresql": _DECIDE.where(
        cast(requests.c.approvers, JSONB).op("?")(bindparam("b_approver", type_=String))
    ),
}
# A tap's transaction runs on every tap: these skip SQLAlchemy's per-call work (see prepared).
_DECIDE_PREPARED = Prepared(_DECIDE)
_DECIDE_AS_APPROVER_PREPARED = {
    name: Prepared(statement) for name, statement in _DECIDE_AS_APPROVER.items()
}
# An approval, on every surface (a batch's "Approve all" too): never by the agent's
# owner when self-approval is off, and only with the quorum's count of approvals.
_APPROVE_AS_APPROVER_PREPARED = {
    name: Prepared(
        statement.where(
            requests.c.owner.is_(None) | (requests.c.owner != bindparam("b_approver")),
            requests.c.quorum <= bindparam("b_approvals"),
        )
    )
    for name, statement in _DECIDE_AS_APPROVER.items()
}


def create(
    conn: Connection,
    request: Request,
    deliveries: Sequence[Delivery],
    now: datetime,
    grant_key: GrantKey | None,
    *,
    limits: AgentLimits = NO_LIMITS,
) -> Created:
    """A covering grant, the identical pending request, or ``request`` inserted with its outbox.

    Raises :class:`~sqlalchemy.exc.IntegrityError` when a concurrent identical
    ask wins the insert (the caller runs it again, and reuses that one), and
    :class:`~tapgate.errors.TooManyAsks` when a new request would put the
    agent over ``limits`` (the transaction rolls back: nobody is pinged).
    """
    if grant_key is not None:
        grant = grants.find(conn, grant_key, now)
        if grant is not None:
            return Created(request=None, created=False, grant=grant)
    earlier = _decided_like(conn, request, now)
    if earlier is not None:
        return Created(request=None, created=False, earlier=earlier)
    row = request_to_row(request)
    insert_request = _INSERT_REQUEST[conn.dialect.name]
    expired: tuple[Request, ...] = ()
    if conn.execute(insert_request, row).rowcount != 1:
        existing = _pending_like(conn, request)
        if existing is not None and existing.expires_at > now:
            return Created(request=existing, created=False)
        if existing is not None:
            expired = tuple(expire(conn, [existing.id], now))
        if conn.execute(insert_request, row).rowcount != 1:
            raise StoreError("could not create or reuse a pending request")
    # Counted after the insert, inside the transaction: raising rolls it back.
    _requests.check_limits(conn, request.agent, limits, now)
    # the "requested" audit line is written by a trigger
    outbox.queue(conn, request.id, deliveries, now, kind="request")
    return Created(request=request, created=True, expired=expired)


def _decided_like(conn: Connection, request: Request, now: datetime) -> Request | None:
    """An identical call's approval (consumed here, now) or live denial, if there is one."""
    params = {
        "b_agent": request.agent,
        "b_session": request.session or "",
        "b_tool": request.tool,
        "b_digest": request.args_digest,
        "b_now": now,
    }
    row = conn.execute(_SELECT_DECIDED_SAME, params).mappings().first()
    if row is None:
        return None
    found = request_from_row(row)
    if found.status == "approved" and not consume(conn, found.id, now):
        return None  # consumed a moment ago by another reader: ask anew
    return found


def consume(conn: Connection, request_id: str, now: datetime) -> bool:
    """Mark a once-approval used; True for the one caller that consumed it."""
    return conn.execute(_CONSUME, {"b_id": request_id, "b_now": now}).rowcount == 1


def _pending_like(conn: Connection, request: Request) -> Request | None:
    params = {
        "b_agent": request.agent,
        "b_session": request.session or "",
        "b_tool": request.tool,
        "b_digest": request.args_digest,
    }
    row = conn.execute(_SELECT_PENDING_SAME, params).mappings().first()
    return request_from_row(row) if row is not None else None


@dataclass(frozen=True, kw_only=True, slots=True)
class Change:
    """One resolve or cancel, run as a single transaction (see ``Store.transition``)."""

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
    approvals: int = 1
    """Distinct approvals counted for an approval (see ``store.approvals``)."""
    in_batch: bool = False  # batches.decide_all numbers and marks stale once per transaction
    edited: Mapping[str, Any] | None = None
    """An approval's edited arguments (``core.edits``): stored with their digest."""

    def __call__(self, conn: Connection) -> Transition:
        if self.event is not None and not event_ids.remember(conn, *self.event, self.now):
            return Transition(request=None, outcome="duplicate")
        params = {
            "b_id": self.request_id,
            "b_now": self.now,
            "b_status": self.to,
            "b_by": self.by,
            "b_reason": self.reason,
            "b_scope": self.scope,
            "b_detail": json.dumps(self.detail, sort_keys=True) if self.detail else None,
            "b_edited": None if self.edited is None else canonical_json(self.edited),
            "b_edited_digest": None if self.edited is None else args_digest(self.edited),
        }
        if not self.in_batch:
            numbering.bump(conn)
        statement = _DECIDE_PREPARED
        if self.approver_check:
            statement = _DECIDE_AS_APPROVER_PREPARED[conn.dialect.name]
            if self.to == "approved":
                statement = _APPROVE_AS_APPROVER_PREPARED[conn.dialect.name]
                params["b_approvals"] = self.approvals
            params["b_approver"] = self.by
        rows = statement.returning(conn, params)
        if not rows:
            return self._not_applied(conn)
        decided = request_from_row(rows[0])
        if not self.in_batch:
            numbering.stale_batches(conn, [decided])
        grant = self.grant(decided) if self.grant is not None else None
        if grant is not None:  # the decision itself is audited by a trigger
            grants.add(conn, grant, request_id=self.request_id, by=self.by, now=self.now)
        return Transition(request=decided, outcome="applied")

    def _not_applied(self, conn: Connection) -> Transition:
        """Why the compare-and-set matched nothing: each reason is audited."""
        current = _requests.get(conn, self.request_id)
        if current is None:  # a forged or stale reference: audited like any refusal
            self.refused(conn, "no such request")
            return Transition(request=None, outcome="missing")
        if self.approver_check and self.by not in current.approvers:
            self.refused(conn, "not an approver")
            return Transition(request=current, outcome="unauthorized")
        live = current.status == "pending" and current.expires_at > self.now
        if live and self.approver_check and self.to == "approved":
            if current.owner == self.by:
                self.refused(conn, "self-approval: the agent's owner")
                return Transition(request=current, outcome="self_approval")
            self.refused(conn, f"needs {current.quorum} approvals")
            return Transition(request=current, outcome="short_of_quorum")
        if current.status == "pending":  # pending but not updated: overdue
            expired = expire(conn, [self.request_id], self.now)
            self.refused(conn, "expired")
            return Transition(request=expired[0] if expired else current, outcome="expired")
        by = f" by {current.resolved_by}" if current.resolved_by else ""
        self.refused(conn, f"already {current.status}{by}")
        return Transition(request=current, outcome="final")

    def refused(self, conn: Connection, why: str) -> None:
        """Audit this change's refusal (``store.approvals`` audits a second tap with it)."""
        detail = {"reason": self.reason, "scope": self.scope, **self.detail}
        detail |= {"wanted": self.to, "why": why}
        rid: str | None = self.request_id
        if len(self.request_id) > _ID_MAX:  # only a forged reference is this long
            detail["request_id"], rid = self.request_id, None
        audit.write(conn, self.now, "refused", rid, self.by, detail)


def expire_one(conn: Connection, request_id: str, now: datetime) -> Transition:
    """Expire one request if it is pending and overdue: ``expired``, ``final`` or ``missing``."""
    expired = expire(conn, [request_id], now)
    if expired:
        return Transition(request=expired[0], outcome="expired")
    current = _requests.get(conn, request_id)
    return Transition(request=current, outcome="final" if current else "missing")
