"""Asking a batch's calls at once: what ``lifecycle.create`` does per call, in a few statements.

Why: asking one call is three statements (a covering grant, an identical
earlier decision, the INSERT), each paying SQLAlchemy's per-statement cost;
a 20-call batch ran 60 of them in its submit transaction, most of the time
between the agent's POST and the card reaching Slack (docs/benchmarks.md).
Every call of a batch is the same agent's and session's, so the lookups can
be answered for the whole batch at once: one grant query, one
earlier-decision query, one query for identical pending requests, and one
multi-row INSERT of the new requests.

The lookups are the single-call statements themselves with the key's
equality widened to a list (:func:`widen`), so a criterion added to
``grants.find`` or to the earlier-decision lookup applies here too. The
per-call rules then run in the agent's order, as ``lifecycle.create`` runs
them one call after another: a grant answers first; an earlier approval is
consumed by the first identical call only (a compare-and-set, as before),
a live denial answers every identical call; an identical pending request
(of an earlier ask, or an earlier call of this batch) is reused, and an
overdue one is expired on the way by ``lifecycle.create`` itself. New
requests are inserted in order (their ``requested`` audit lines follow the
agent's order); a concurrent identical insert on PostgreSQL raises
``IntegrityError``, and the caller runs the whole batch again, as it did.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Column, Connection, Select, bindparam, insert
from sqlalchemy.sql import operators, visitors
from sqlalchemy.sql.elements import BinaryExpression, BindParameter
from sqlalchemy.sql.visitors import ExternallyTraversible

from tapgate.gate.models import Grant, Request
from tapgate.store import grants, lifecycle
from tapgate.store.grants import GrantKey
from tapgate.store.rows import grant_from_row, request_from_row, request_to_row
from tapgate.store.schema import grants as grants_table
from tapgate.store.schema import requests

__all__ = ["Asked", "ask_all", "widen"]

_NO_OPTIONS: Mapping[str, Any] = {}

Key = tuple[str, str]
"""A call's (tool, arguments digest), or a grant key's (tool, fingerprint)."""


def widen(query: Select[Any], lists: Mapping[str, tuple[Column[Any], str]]) -> Select[Any]:
    """``query`` with each ``column = :name`` (``lists``' keys) made ``column IN :list``, no LIMIT.

    Raises ``ValueError`` when a parameter is not compared for equality in
    ``query``: the single-call statement changed shape, and this must too.
    """
    found: set[str] = set()

    def swap(element: ExternallyTraversible, **_: Any) -> ExternallyTraversible | None:
        if (
            isinstance(element, BinaryExpression)
            and element.operator is operators.eq
            and isinstance(element.right, BindParameter)
            and element.right.key in lists
            and element.left.compare(lists[element.right.key][0])
        ):
            column, many = lists[element.right.key]
            found.add(element.right.key)
            return column.in_(bindparam(many, expanding=True))
        return None

    widened = visitors.replacement_traverse(cast(ExternallyTraversible, query), _NO_OPTIONS, swap)
    assert isinstance(widened, Select)
    if found != set(lists):
        raise ValueError(f"no equality on {sorted(set(lists) - found)} to widen")
    return widened.limit(None)


_GRANTS = widen(
    grants._SELECT_COVERING,
    {
        "b_tool": (grants_table.c.tool, "b_tools"),
        "b_fingerprint": (grants_table.c.fingerprint, "b_fingerprints"),
    },
)
_CALL_KEY = {
    "b_tool": (requests.c.tool, "b_tools"),
    "b_digest": (requests.c.args_digest, "b_digests"),
}
_DECIDED = widen(lifecycle._SELECT_DECIDED_SAME, _CALL_KEY)
_PENDING = widen(lifecycle._SELECT_PENDING_SAME, _CALL_KEY)
_INSERT = insert(requests)


Asked = tuple[Request, GrantKey | None]
"""A call to ask: its request, and the key a grant covering it must match (if it can have one)."""


def ask_all(conn: Connection, asks: Sequence[Asked], now: datetime) -> list[lifecycle.Created]:
    """``lifecycle.create`` for each ask, in order, with no outbox rows; one result per ask.

    Asks that are not all one agent's and session's (never from
    ``submit_batch``) are asked one by one.
    """
    if not asks:
        return []
    agent, session = asks[0][0].agent, asks[0][0].session or ""
    if any(
        (r.agent, r.session or "") != (agent, session)
        or (key is not None and (key.agent, key.session or "") != (agent, session))
        for r, key in asks
    ):
        return [lifecycle.create(conn, r, (), now, key) for r, key in asks]
    covering = _covering(conn, [key for _, key in asks if key is not None], agent, session, now)
    calls = [r for r, _ in asks]
    earlier = _by_key(conn, _DECIDED, calls, {"b_agent": agent, "b_session": session, "b_now": now})
    pending = _by_key(conn, _PENDING, calls, {"b_agent": agent, "b_session": session})
    results: list[lifecycle.Created] = []
    asked: dict[Key, Request] = {}  # this batch's request for each call, new or reused
    unsent: list[Request] = []  # new requests not inserted yet, in order
    for request, grant_key in asks:
        key = (request.tool, request.args_digest)
        grant = covering.get((grant_key.tool, grant_key.fingerprint)) if grant_key else None
        if grant is not None:
            results.append(lifecycle.Created(request=None, created=False, grant=grant))
            continue
        answer = _take_earlier(conn, earlier.get(key), now)
        if answer is not None:
            results.append(lifecycle.Created(request=None, created=False, earlier=answer))
        elif key in asked:
            results.append(lifecycle.Created(request=asked[key], created=False))
        elif key in pending:
            # Reused, or expired on the way and asked anew: lifecycle's rules,
            # after the new requests before it, so the audit keeps the order.
            _insert(conn, unsent)
            unsent = []
            created = lifecycle.create(conn, request, (), now, None)
            if created.request is not None:  # None only if a racing reader consumed an approval
                asked[key] = created.request
            results.append(created)
        else:
            unsent.append(request)
            asked[key] = request
            results.append(lifecycle.Created(request=request, created=True))
    _insert(conn, unsent)
    return results


def _covering(
    conn: Connection, keys: Sequence[GrantKey], agent: str, session: str, now: datetime
) -> dict[Key, Grant]:
    """A covering grant for each (tool, fingerprint) of ``keys`` that has one."""
    if not keys:
        return {}
    params = {
        "b_agent": agent,
        "b_session": session,
        "b_now": now,
        "b_tools": sorted({k.tool for k in keys}),
        "b_fingerprints": sorted({k.fingerprint for k in keys}),
    }
    found: dict[Key, Grant] = {}
    for row in conn.execute(_GRANTS, params).mappings():
        found.setdefault((row["tool"], row["fingerprint"]), grant_from_row(row))
    return found


def _by_key(
    conn: Connection, query: Select[Any], calls: Sequence[Request], params: dict[str, Any]
) -> dict[Key, list[Request]]:
    """The rows ``query`` finds for the calls, per (tool, digest), in the query's order."""
    wanted = {(c.tool, c.args_digest) for c in calls}
    params |= {
        "b_tools": sorted({tool for tool, _ in wanted}),
        "b_digests": sorted({digest for _, digest in wanted}),
    }
    found: dict[Key, list[Request]] = {}
    for row in conn.execute(query, params).mappings():
        key = (row["tool"], row["args_digest"])
        if key in wanted:
            found.setdefault(key, []).append(request_from_row(row))
    return found


def _take_earlier(
    conn: Connection, candidates: list[Request] | None, now: datetime
) -> Request | None:
    """The newest earlier decision that answers the call, as ``lifecycle`` finds it.

    A live denial answers every identical call; an approval answers only the
    call that consumes it (and leaves the list: the next identical call sees
    the one after it, as a fresh lookup would).
    """
    if not candidates:
        return None
    found = candidates[0]
    if found.status != "approved":
        return found
    candidates.pop(0)
    return found if lifecycle.consume(conn, found.id, now) else None


def _insert(conn: Connection, new: Sequence[Request]) -> None:
    """Insert the new requests in order; the ``requested`` audit lines come from the trigger."""
    if new:
        conn.execute(_INSERT, [request_to_row(r) for r in new])
