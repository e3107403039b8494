"""Reading requests: one by id, several for the sweep, filtered lists, the pending count.

Reads only. Every write to a request (creation, decisions, expiry) is in
:mod:`tapgate.store.lifecycle`, which uses :func:`get` to explain a
compare-and-set that matched nothing.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta

from sqlalchemy import ColumnElement, Connection, bindparam, func, select

from tapgate.errors import TooManyAsks
from tapgate.gate.models import Request, RequestStatus
from tapgate.policy.limits import AgentLimits
from tapgate.store.rows import request_from_row
from tapgate.store.schema import requests

__all__ = [
    "check_limits",
    "count",
    "decided_since",
    "get",
    "get_many",
    "newest_first",
    "storable_id",
]

_SELECT_ONE = select(requests).where(requests.c.id == bindparam("b_id"))
_SEQ_MAX = 2**31 - 1
"""The largest ``decided_seq`` both backends hold (``INTEGER``: int32 on PostgreSQL)."""


def storable_id(value: str) -> bool:
    """Whether ``value`` could be a stored id: PostgreSQL cannot hold NUL in text, nor compare it.

    An id from a URL or a body is looked up as it came; one with a NUL names
    no row, and asking PostgreSQL would be an error (a 500) rather than "none".
    """
    return "\x00" not in value


def get(conn: Connection, request_id: str) -> Request | None:
    """The request with this id, if there is one."""
    if not storable_id(request_id):
        return None
    row = conn.execute(_SELECT_ONE, {"b_id": request_id}).mappings().first()
    return request_from_row(row) if row is not None else None


_IDS_PER_QUERY = 512


def get_many(conn: Connection, ids: list[str], *, decided: bool = False) -> list[Request]:
    """The requests among ``ids`` that exist, in no particular order.

    ``decided``: only those no longer pending. The reconciliation sweep asks
    about every id waited on, every second: with 10,000 parked long-polls,
    building 10,000 requests to find the few decided ones was ~15 MB of
    garbage a second. The ids go in chunks padded to a power of two (by
    repeating one), so the statement's text takes one of six shapes: the
    driver caches prepared statements by text (sqlite3 keeps 128), and an
    ``IN`` of each new length of the waiters' list was one more statement of
    thousands of parameters held in memory.
    """
    found: list[Request] = []
    for start in range(0, len(ids), _IDS_PER_QUERY):
        chunk = ids[start : start + _IDS_PER_QUERY]
        chunk += [chunk[-1]] * (max(16, 1 << (len(chunk) - 1).bit_length()) - len(chunk))
        query = select(requests).where(requests.c.id.in_(chunk))
        if decided:
            query = query.where(requests.c.status != "pending")
        found += (request_from_row(r) for r in conn.execute(query).mappings())
    return found


def newest_first(
    conn: Connection,
    *,
    status: RequestStatus | None,
    agent: str | None,
    tool: str | None,
    id_prefix: str | None,
    limit: int,
    approver: str | None = None,
    offset: int = 0,
) -> list[Request]:
    """Requests matching every filter given, newest first (``id_prefix`` by ``LIKE``).

    ``approver``: only requests that name them among their approvers (the web
    inbox's queue), matched in SQL so a long queue is not read to show a page.
    """
    if not all(storable_id(text) for text in (agent, tool, id_prefix) if text is not None):
        return []  # a filter holding NUL (the inbox's ?agent=%00) matches no row
    order = (requests.c.created_at.desc(), requests.c.id)
    query = select(requests).order_by(*order).limit(limit).offset(offset)
    if approver is not None:
        query = query.where(_names(approver))
    if status is not None:
        query = query.where(requests.c.status == status)
    if agent is not None:
        query = query.where(requests.c.agent == agent)
    if tool is not None:
        query = query.where(requests.c.tool == tool)
    if id_prefix is not None:
        query = query.where(requests.c.id.startswith(id_prefix, autoescape=True))
    return [request_from_row(r) for r in conn.execute(query).mappings()]


def count(conn: Connection, status: RequestStatus, approver: str | None = None) -> int:
    """How many requests have ``status`` (an indexed count), of ``approver``'s if given."""
    query = select(func.count()).select_from(requests).where(requests.c.status == status)
    if approver is not None:
        query = query.where(_names(approver))
    return int(conn.execute(query).scalar_one())


def _names(approver: str) -> ColumnElement[bool]:
    """``approvers`` (a JSON list) holds ``approver``: its JSON string, quotes included."""
    return requests.c.approvers.contains(json.dumps(approver), autoescape=True)


def decided_since(
    conn: Connection, agent: str, after: tuple[int, str] | None, limit: int
) -> list[Request]:
    """``agent``'s requests decided after the cursor ``after`` = (decided_seq, id), in order.

    Decision numbers are handed out in commit order (see
    :mod:`~tapgate.store.lifecycle`), so a reader that resumes from the
    last (number, id) it saw can neither skip nor repeat a decision.
    """
    if after is not None and after[0] > _SEQ_MAX:
        # No decision is numbered past the column's width, and PostgreSQL refuses
        # such a bound with an error: a 500 for an agent's (made-up) cursor.
        return []
    seq, ident = requests.c.decided_seq, requests.c.id
    query = select(requests).where(requests.c.agent == agent, seq.is_not(None))
    if after is not None:
        query = query.where((seq > after[0]) | ((seq == after[0]) & (ident > after[1])))
    query = query.order_by(seq, ident).limit(limit)
    return [request_from_row(r) for r in conn.execute(query).mappings()]


_MINUTE = timedelta(minutes=1)


def check_limits(conn: Connection, agent: str, limits: AgentLimits, now: datetime) -> None:
    """Raise :class:`TooManyAsks` if ``agent`` is over a limit, counting a request just added."""
    if limits.max_pending is not None:
        pending = (requests.c.agent == agent) & (requests.c.status == "pending")
        query = select(func.count(), func.min(requests.c.expires_at)).where(pending)
        waiting, soonest = conn.execute(query).one()
        if waiting > limits.max_pending:
            retry = (soonest - now).total_seconds() if soonest is not None else 60.0
            raise TooManyAsks(agent, "max_pending", limits.max_pending, retry)
    if limits.asks_per_minute is not None:
        recent = (requests.c.agent == agent) & (requests.c.created_at > now - _MINUTE)
        query = select(func.count(), func.min(requests.c.created_at)).where(recent)
        asked, oldest = conn.execute(query).one()
        if asked > limits.asks_per_minute:
            retry = (oldest + _MINUTE - now).total_seconds() if oldest is not None else 60.0
            raise TooManyAsks(agent, "asks_per_minute", limits.asks_per_minute, retry)
