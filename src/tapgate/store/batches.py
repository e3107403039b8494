"""Batches: the calls an agent submitted together, in its order.

A batch is a set of requests, not a new kind of request (decision
0011-a-batch-is-a-set-of-requests): each call that asks is its own request (own digest, own
exactly-once
decision, own audit) carrying the batch's id in ``requests.batch_id``; the
``batches`` row keeps the agent's calls in order, with the decision of each
call that policy, a grant or an earlier identical decision answered at once,
so the batch reads the same after a restart or on another replica.

The requests and the batch row are written in one transaction
(:func:`create`): a batch is never half there. So are the batch's messages:
one outbox row per approver × channel for the whole batch (a card listing
every call that approver decides), not one per request.

"Approve all" / "Deny all" (:func:`decide_all`) is one compare-and-set per
still-pending member, all in one transaction: the members are read and
decided together, each by its own ``lifecycle.Change`` (own approver check,
own audit line, own grant of its own fingerprint).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, bindparam, insert, select

from tapgate.gate.models import Decision, Delivery, Request
from tapgate.policy.limits import NO_LIMITS, AgentLimits
from tapgate.store import batch_asks, event_ids, lifecycle, numbering, outbox
from tapgate.store.batch_outbox import members
from tapgate.store.grants import GrantKey
from tapgate.store.requests import check_limits, storable_id
from tapgate.store.rows import decision_from_json, decision_to_json
from tapgate.store.schema import batches

__all__ = ["Ask", "Batch", "BatchItem", "create", "decide_all", "get", "members"]

_INSERT = insert(batches)
_SELECT = select(batches).where(batches.c.id == bindparam("b_id"))


@dataclass(frozen=True, kw_only=True, slots=True)
class BatchItem:
    """One call of a batch: the request that follows it, or the decision made at once."""

    tool: str
    request_id: str | None = None
    decision: Decision | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class Batch:
    """A batch as stored: whose, and its calls in the agent's order."""

    id: str
    agent: str
    session: str | None
    created_at: datetime
    items: tuple[BatchItem, ...]

    @property
    def request_ids(self) -> list[str]:
        """The requests of the batch, in order (calls decided at once have none)."""
        return [item.request_id for item in self.items if item.request_id is not None]


@dataclass(frozen=True, kw_only=True, slots=True)
class Ask:
    """A call of the batch that policy sends to a human: the request to create."""

    index: int
    request: Request
    deliveries: Sequence[Delivery]
    grant_key: GrantKey | None


ItemFor = Callable[[Ask, lifecycle.Created], BatchItem]


def create(
    conn: Connection,
    batch: Batch,
    asks: Sequence[Ask],
    now: datetime,
    item_for: ItemFor,
    *,
    limits: AgentLimits = NO_LIMITS,
) -> tuple[Batch, list[lifecycle.Created]]:
    """Create (or reuse, or answer at once) each ask and store the batch, in one transaction.

    ``batch.items`` holds the calls decided by policy; ``item_for`` turns what
    asking did (a grant, an earlier decision, a request) into the item at the
    ask's index. Raises ``IntegrityError`` like :func:`lifecycle.create` (the
    caller runs the whole batch again).
    """
    items = list(batch.items)
    # Every ask at once (a few statements, not three per call: see batch_asks).
    # Limits are counted once below, after every insert: per ask they were
    # two COUNTs over the agent's requests each, for the same verdict (the
    # transaction rolls back whole).
    results = batch_asks.ask_all(conn, [(a.request, a.grant_key) for a in asks], now)
    cards: dict[Delivery, str] = {}  # one card per approver × channel, keyed on a member
    for ask, created in zip(asks, results, strict=True):
        items[ask.index] = item_for(ask, created)
        if created.created and created.request is not None:
            for delivery in ask.deliveries:
                cards.setdefault(delivery, created.request.id)
    if any(created.created for created in results):
        check_limits(conn, batch.agent, limits, now)
    by_member: dict[str, list[Delivery]] = {}
    for delivery, request_id in cards.items():
        by_member.setdefault(request_id, []).append(delivery)
    for request_id, deliveries in by_member.items():
        outbox.queue(conn, request_id, deliveries, now, kind="batch", batch_id=batch.id)
    stored = Batch(
        id=batch.id,
        agent=batch.agent,
        session=batch.session,
        created_at=batch.created_at,
        items=tuple(items),
    )
    conn.execute(_INSERT, _to_row(stored))
    return stored, results


def decide_all(
    conn: Connection,
    batch_id: str,
    change_for: Callable[[str], lifecycle.Change],
    now: datetime,
    event: tuple[str, str] | None = None,
) -> list[lifecycle.Transition] | None:
    """Decide every still-pending member of the batch; one transition per member, in order.

    ``None`` when ``event`` was handled before (a redelivery: nothing done).
    Members already decided are reported as ``final`` with no compare-and-set
    and no audit line (their own decision is the record); each pending one is
    ``change_for(its id)``, which checks the approver, audits a refusal and
    makes its grant. An empty list means there is no such batch.
    """
    if event is not None and not event_ids.remember(conn, *event, now):
        return None
    found = members(conn, batch_id)
    if any(member.is_pending for member in found):
        # One decision number and one card version for the transaction: they
        # commit together, so per member they were 40 extra UPDATEs of two hot
        # rows on a 20-call "Approve all" with nothing more to tell readers.
        numbering.bump(conn)
    transitions = []
    for member in found:
        if member.is_pending:
            change = dataclasses.replace(change_for(member.id), in_batch=True)
            transitions.append(change(conn))
        else:
            transitions.append(lifecycle.Transition(request=member, outcome="final"))
    decided = [t.request for t in transitions if t.outcome == "applied" and t.request]
    numbering.stale_batches(conn, decided)
    return transitions


def get(conn: Connection, batch_id: str) -> Batch | None:
    """The batch with this id, if there is one (an id PostgreSQL cannot hold names none)."""
    if not storable_id(batch_id):
        return None
    row = conn.execute(_SELECT, {"b_id": batch_id}).mappings().first()
    return _from_row(row) if row is not None else None


def _to_row(batch: Batch) -> dict[str, Any]:
    items = [_item_to_json(item) for item in batch.items]
    return {
        "id": batch.id,
        "agent": batch.agent,
        "session": batch.session or "",
        "items": json.dumps(items, sort_keys=True),
        "created_at": batch.created_at,
    }


def _item_to_json(item: BatchItem) -> dict[str, Any]:
    saved: dict[str, Any] = {"tool": item.tool}
    if item.request_id is not None:
        saved["request_id"] = item.request_id
    if item.decision is not None:
        saved["decision"] = decision_to_json(item.decision)
        saved["decision"]["request_id"] = item.decision.request_id
    return saved


def _from_row(row: Mapping[Any, Any]) -> Batch:
    items = tuple(
        BatchItem(
            tool=saved["tool"],
            request_id=saved.get("request_id"),
            decision=decision_from_json(saved["decision"]) if "decision" in saved else None,
        )
        for saved in json.loads(row["items"])
    )
    return Batch(
        id=row["id"],
        agent=row["agent"],
        session=row["session"] or None,
        created_at=row["created_at"],
        items=items,
    )
