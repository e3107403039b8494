"""Single-use (``always_uses``) grants in the store: each use taken once, across replicas.

Two ``Store`` objects on one database are two replicas; on PostgreSQL their
transactions really overlap, and the compare-and-set on ``uses_left`` must
let exactly as many calls through as the grant has uses.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest

from tapgate.gate.clock import ManualClock
from tapgate.gate.models import Grant, Request
from tapgate.store import GrantKey, Store
from tests.factories import make_request

KEY = GrantKey(agent="a", session=None, tool="t", fingerprint="f")


@pytest.fixture
async def replicas(db_url: str) -> AsyncIterator[tuple[Store, Store]]:
    first = await Store.open(db_url)
    second = await Store.open(db_url, migrate=False)
    try:
        yield first, second
    finally:
        await second.close()
        await first.close()


async def make_grant(store: Store, clock: ManualClock, grant_id: str, uses: int | None) -> None:
    """A grant made the one way tapgate makes them: with an approval."""
    now = clock.now()
    grant = Grant(
        id=grant_id,
        scope="always",
        agent="a",
        session=None,
        tool="t",
        fingerprint="f",
        created_at=now,
        created_by="alice",
        expires_at=now + timedelta(days=1),
        uses_left=uses,
    )
    asked = make_request(now, agent="a", tool="t", arguments={"grant": grant_id})
    await store.create_request(asked, [], now)

    def granting(_: Request) -> Grant:
        return grant

    assert (
        await store.transition(asked.id, to="approved", by="alice", now=now, grant=granting)
    ).outcome == "applied"


async def ask(store: Store, clock: ManualClock, n: int) -> str | None:
    """An ask covered by ``KEY``: the grant that answered it, or ``None`` (a request)."""
    asked = make_request(clock.now(), agent="a", tool="t", arguments={"n": n})
    created = await store.create_request(asked, [], clock.now(), KEY)
    return created.grant.id if created.grant is not None else None


async def test_a_single_use_grant_allows_exactly_one_of_many_concurrent_calls(
    replicas: tuple[Store, Store], clock: ManualClock
) -> None:
    first, second = replicas
    await make_grant(first, clock, "once", uses=1)
    answers = await asyncio.gather(*(ask(first if n % 2 else second, clock, n) for n in range(8)))
    assert sorted(answers, key=lambda a: a is None) == ["once"] + [None] * 7
    [spent] = await first.list_grants()
    assert spent.uses_left == 0 and not spent.active(clock.now())
    assert await first.list_grants(active_at=clock.now()) == []
    used = [e for e in await first.audit_log() if e.event == "grant_used"]
    assert [(e.actor, e.detail["uses_left"]) for e in used] == [("agent:a", 0)]


async def test_a_limited_grant_counts_down_and_an_unlimited_one_is_preferred(
    replicas: tuple[Store, Store], clock: ManualClock
) -> None:
    first, second = replicas
    await make_grant(first, clock, "twice", uses=2)
    assert [await ask(first, clock, 1), await ask(second, clock, 2)] == ["twice", "twice"]
    assert await ask(first, clock, 3) is None
    await make_grant(first, clock, "limited", uses=1)
    clock.advance(1)
    await make_grant(first, clock, "standing", uses=None)
    assert [await ask(second, clock, n) for n in range(3)] == ["standing"] * 3
    [limited] = [g for g in await first.list_grants() if g.id == "limited"]
    assert limited.uses_left == 1  # never spent while a standing grant covers the call


async def test_a_revoked_single_use_grant_is_not_spent(
    replicas: tuple[Store, Store], clock: ManualClock
) -> None:
    first, _ = replicas
    await make_grant(first, clock, "once", uses=1)
    assert await first.revoke_grant("once", by="ops", now=clock.now())
    assert await ask(first, clock, 1) is None
    [grant] = await first.list_grants()
    assert grant.uses_left == 1
