"""Asking a batch at once (``batch_asks``) does what asking its calls one by one does.

Every outcome of ``lifecycle.create`` appears in one batch (a grant, an
approval consumed, a live denial, an identical pending request reused, an
overdue one expired and asked anew, duplicates within the batch, new
requests): the batch path and the one-by-one path run on the same database
state (each in a transaction rolled back after) and must give the same
answers, leave the same rows and write the same audit lines in the same order.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import pytest
from sqlalchemy import Connection, event, select, update

from tapgate.gate.clock import ManualClock
from tapgate.gate.models import Grant, Request
from tapgate.store import GrantKey, Store, lifecycle
from tapgate.store.batch_asks import Asked, ask_all, widen
from tapgate.store.batches import Ask, Batch, BatchItem
from tapgate.store.schema import audit, requests
from tests.factories import make_request

SESSION = "s1"


class _Undo(Exception):
    """Raised to roll a transaction back once its result is read."""

    def __init__(self, value: Any) -> None:
        super().__init__("rolled back")
        self.value = value


def call(now: datetime, target: str, **overrides: Any) -> Request:
    """A fresh ask of ``deploy`` with ``target``: identical calls share the digest."""
    fields: dict[str, Any] = {"session": SESSION, "arguments": {"target": target}}
    return make_request(now, **(fields | overrides))


def key(tool: str = "deploy", fingerprint: str = "fp") -> GrantKey:
    return GrantKey(agent="agent-1", session=SESSION, tool=tool, fingerprint=fingerprint)


async def decide(store: Store, request: Request, now: datetime, to: str, **kw: Any) -> None:
    await store.create_request(request, [], now)
    done = await store.transition(request.id, to=to, by="alice", now=now, **kw)  # type: ignore[arg-type]
    assert done.outcome == "applied"


async def scenario(store: Store, clock: ManualClock) -> list[Asked]:
    """The database state and the batch that meets every rule of asking."""
    start = clock.now()
    grant = Grant(
        id="g-session",
        scope="session",
        agent="agent-1",
        session=SESSION,
        tool="deploy",
        fingerprint="fp-granted",
        created_at=start,
        created_by="alice",
    )

    def granting(_: Request) -> Grant:
        return grant

    await decide(store, call(start, "granted"), start, "approved", scope="session", grant=granting)
    # "twice": a live denial (older) under an unconsumed approval (newer).
    await decide(store, call(start, "twice", ttl=3600), start, "denied")
    await decide(store, call(start, "consumed"), start, "approved", scope="once")
    await decide(store, call(start, "denied", ttl=3600), start, "denied")
    await decide(store, call(start, "denial-over", ttl=5), start, "denied")
    await store.create_request(call(start, "overdue", ttl=5), [], start)
    clock.advance(1)
    # Asked in the session it would be answered in, the live denial would answer
    # it: approved elsewhere, then moved (an approval newer than a live denial).
    twice = call(clock.now(), "twice", session="elsewhere")
    await decide(store, twice, clock.now(), "approved", scope="once")
    moved = update(requests).where(requests.c.id == twice.id).values(session=SESSION)
    await store.run(lambda c: c.execute(moved))
    clock.advance(9)  # "overdue" and "denial-over" are now past their deadlines
    now = clock.now()
    await store.create_request(call(now, "pending"), [], now)
    taken = call(now, "consumed")  # an identical ask consumes the approval before the batch
    assert (await store.create_request(taken, [], now)).earlier is not None
    asks: list[Asked] = [
        (call(now, "granted"), key(fingerprint="fp-granted")),
        (call(now, "twice"), key()),  # consumes the approval
        (call(now, "new"), None),
        (call(now, "twice"), key()),  # the approval is used: the older denial answers
        (call(now, "denied"), None),
        (call(now, "denied"), None),  # a denial answers every identical call
        (call(now, "pending"), key()),  # reuses the pending request
        (call(now, "overdue"), None),  # expires it on the way, asks anew
        (call(now, "new"), None),  # reuses this batch's own new request
        (call(now, "denial-over"), None),  # an overdue denial answers nothing: asks
        (call(now, "consumed"), key()),  # a consumed approval answers nothing: asks
        (call(now, "other", tool="restart"), key(tool="restart")),
    ]
    return asks


def summary(conn: Connection, asks: Sequence[Asked], results: list[lifecycle.Created]) -> Any:
    """What asking answered and left behind, comparable across the two paths."""
    answers = [
        (
            r.created,
            r.grant.id if r.grant else None,
            (r.earlier.id, r.earlier.status) if r.earlier else None,
            r.request.id if r.request else None,
            [e.id for e in r.expired],
        )
        for r in results
    ]
    rows = conn.execute(
        select(requests.c.id, requests.c.status, requests.c.consumed_at).order_by(requests.c.id)
    ).all()
    lines = conn.execute(select(audit.c.event, audit.c.request_id).order_by(audit.c.id)).all()
    return answers, [tuple(r) for r in rows], [tuple(line) for line in lines]


async def rolled_back(store: Store, fn: Callable[[Connection], Any]) -> Any:
    def run(conn: Connection) -> None:
        raise _Undo(fn(conn))

    with pytest.raises(_Undo) as undone:
        await store.run(run)
    return undone.value.value


async def test_a_batch_is_asked_as_its_calls_one_by_one(store: Store, clock: ManualClock) -> None:
    asks = await scenario(store, clock)
    now = clock.now()

    def at_once(conn: Connection) -> Any:
        return summary(conn, asks, ask_all(conn, asks, now))

    def one_by_one(conn: Connection) -> Any:
        results = [lifecycle.create(conn, r, (), now, k) for r, k in asks]
        return summary(conn, asks, results)

    batch, single = await rolled_back(store, at_once), await rolled_back(store, one_by_one)
    assert batch == single
    answers = batch[0]
    assert [a[1] is not None for a in answers] == [True] + [False] * 11  # the grant
    assert [a[2][1] if a[2] else None for a in answers][1:6] == [
        "approved",
        None,
        "denied",
        "denied",
        "denied",
    ]
    assert answers[8][3] == asks[2][0].id and not answers[8][0]  # the batch's own request
    assert answers[7][0] and len(answers[7][4]) == 1  # the overdue one expired, asked anew


async def test_a_batch_of_new_calls_costs_a_few_statements(
    store: Store, clock: ManualClock
) -> None:
    """Not three per call: 20 calls are three lookups and one INSERT (docs/benchmarks.md)."""
    now = clock.now()
    asks: list[Asked] = [(call(now, f"t{i}"), key()) for i in range(20)]
    statements: list[str] = []

    def counted(conn: Connection) -> list[lifecycle.Created]:
        def count(*args: Any) -> None:
            statements.append(args[2])

        event.listen(conn, "before_cursor_execute", count)
        try:
            return ask_all(conn, asks, now)
        finally:
            event.remove(conn, "before_cursor_execute", count)

    results = await store.run(counted)
    assert [r.request.id for r in results if r.request] == [r.id for r, _ in asks]
    assert all(r.created for r in results)
    assert len(statements) <= 4, statements
    stored = await store.get_requests([r.id for r, _ in asks])
    assert {r.id for r in stored} == {r.id for r, _ in asks}
    lines = await store.audit_log()
    assert [line.request_id for line in lines if line.event == "requested"] == [
        r.id for r, _ in asks
    ]


async def test_calls_of_several_sessions_are_asked_one_by_one(
    store: Store, clock: ManualClock
) -> None:
    now = clock.now()
    asks: list[Asked] = [(call(now, "a"), None), (make_request(now, session="s2"), None)]
    results = await store.run(lambda c: ask_all(c, asks, now))
    assert [r.created for r in results] == [True, True]


def test_widen_refuses_a_statement_without_the_equality() -> None:
    query = select(requests).where(requests.c.tool == "deploy")
    with pytest.raises(ValueError, match="b_digest"):
        widen(query, {"b_digest": (requests.c.args_digest, "b_digests")})


async def test_concurrent_identical_batches_ask_each_call_once(
    store: Store, clock: ManualClock
) -> None:
    """On PostgreSQL the racing INSERTs conflict and the loser runs its batch again, reusing."""
    now = clock.now()

    def item_for(ask: Ask, created: lifecycle.Created) -> BatchItem:
        assert created.request is not None
        return BatchItem(tool=ask.request.tool, request_id=created.request.id)

    async def submit(n: int) -> list[lifecycle.Created]:
        batch_id = f"batch-{n}"
        calls = [call(now, f"t{i}", batch_id=batch_id) for i in range(5)]
        batch = Batch(
            id=batch_id,
            agent="agent-1",
            session=SESSION,
            created_at=now,
            items=tuple(BatchItem(tool=c.tool) for c in calls),
        )
        asks = [Ask(index=i, request=c, deliveries=(), grant_key=None) for i, c in enumerate(calls)]
        return (await store.create_batch(batch, asks, now, item_for))[1]

    batches = await asyncio.gather(*(submit(n) for n in range(8)))
    for index in range(5):
        asked = [created[index] for created in batches]
        assert sum(c.created for c in asked) == 1
        assert len({c.request.id for c in asked if c.request is not None}) == 1
    assert await store.count_requests(status="pending") == 5
