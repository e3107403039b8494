"""Two gates on one PostgreSQL database act as two replicas: decisions wake waiters across them.

The reconciliation sweep is pushed out of the way (one hour), so only
LISTEN/NOTIFY can wake the waiter; the listener's connection is also killed
from the server side to show it comes back.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, create_async_engine

from tapgate.gate import Approver, Directory, Gate, ToolCall
from tapgate.gate.clock import SystemClock
from tapgate.policy import Policy, PolicySpec, Rule
from tapgate.store import Store
from tapgate.store.engine import normalize_url
from tapgate.store.leader import HEARTBEAT_LOCK, Leadership
from tapgate.store.notify import DecisionListener

POLICY = Policy(PolicySpec(rules=(Rule(tool="deploy", action="ask", source="r"),)))
DIRECTORY = Directory([Approver(name="alice")], channels=())


@pytest.fixture
async def replicas(pg_url: str) -> AsyncIterator[tuple[Gate, Gate]]:
    async with await Store.open(pg_url) as store_a, await Store.open(pg_url) as store_b:
        gate_a = Gate(
            store=store_a,
            policy=POLICY,
            directory=DIRECTORY,
            clock=SystemClock(),
            reconcile_interval=3600,
        )
        gate_b = Gate(
            store=store_b,
            policy=POLICY,
            directory=DIRECTORY,
            clock=SystemClock(),
            reconcile_interval=3600,
        )
        async with gate_a, gate_b:
            for gate in (gate_a, gate_b):
                assert gate.listener is not None
                await asyncio.wait_for(gate.listener.connected.wait(), 10)
            yield gate_a, gate_b


async def decide_elsewhere(waiter_gate: Gate, deciding_gate: Gate, n: int) -> float:
    ticket = await waiter_gate.submit(ToolCall(tool="deploy", arguments={"n": n}, agent="ci"))
    assert ticket.request_id is not None
    waiting = asyncio.create_task(waiter_gate.wait(ticket.request_id))
    while waiter_gate.waiting == 0:
        await asyncio.sleep(0.001)
    start = time.perf_counter()
    await deciding_gate.resolve(ticket.request_id, "approve", by="alice")
    decision = await asyncio.wait_for(waiting, 5)
    assert decision is not None and decision.status == "approved"
    return time.perf_counter() - start


async def test_a_decision_on_one_replica_wakes_the_other(replicas: tuple[Gate, Gate]) -> None:
    gate_a, gate_b = replicas
    took = [await decide_elsewhere(gate_a, gate_b, n) for n in range(20)]
    assert max(took) < 0.5, took  # event-driven: milliseconds, never the hour-long sweep


async def test_the_listener_comes_back_after_its_connection_dies(
    replicas: tuple[Gate, Gate],
) -> None:
    gate_a, gate_b = replicas
    listener = gate_a.listener
    assert listener is not None
    pid = listener.server_pid
    assert pid is not None
    await gate_b.store.run(
        lambda c: c.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
    )
    lost = False
    for _ in range(400):  # the listener notices (at once, or at its 5 s keep-alive)
        if not listener.connected.is_set():
            lost = True
            break
        await asyncio.sleep(0.025)
    assert lost, "the listener's connection was not killed"
    await asyncio.wait_for(listener.connected.wait(), 15)  # ... reconnects and reconciles
    assert await decide_elsewhere(gate_a, gate_b, 100) < 0.5


async def test_one_replica_at_a_time_runs_the_timed_duties(replicas: tuple[Gate, Gate]) -> None:
    from datetime import timedelta

    from tapgate.gate import Request
    from tapgate.server.heartbeat import Heartbeat
    from tests.factories import make_request

    gate_a, gate_b = replicas
    now = gate_a.clock.now()
    overdue: Request = make_request(now - timedelta(seconds=120), ttl=60)
    await gate_a.store.create_request(overdue, [], now - timedelta(seconds=120))
    first, second = Heartbeat(gate_a), Heartbeat(gate_b)
    assert await first.leads()
    assert not await second.leads()
    await second.beat()  # not the leader: leaves the overdue request alone
    assert (await gate_a.get_request(overdue.id)).status == "pending"
    await first.beat()
    assert (await gate_a.get_request(overdue.id)).status == "expired"
    await first.close()  # the leader goes away: the other replica takes over
    assert await second.leads()
    await second.close()


async def test_the_listener_backs_off_and_logs_an_outage_once(
    caplog: pytest.LogCaptureFixture, closed_port: int
) -> None:
    """No PostgreSQL to reach: attempts spread out and the outage is one warning, not a stream."""
    engine = create_async_engine(f"postgresql+asyncpg://nobody@127.0.0.1:{closed_port}/none")
    listener = DecisionListener(
        engine, lambda _id: None, lambda: asyncio.sleep(0), retry=0.02, max_retry=0.16
    )
    attempts: list[float] = []
    original = listener._listen_once

    async def timed() -> None:
        attempts.append(time.monotonic())
        await original()

    listener._listen_once = timed  # type: ignore[method-assign]
    with caplog.at_level("DEBUG", logger="tapgate.store.notify"):
        listener.start()
        await asyncio.sleep(1.0)
        await listener.close()
    await engine.dispose()
    gaps = [b - a for a, b in itertools.pairwise(attempts)]
    # 0.02, 0.04, 0.08, 0.16, 0.16 ...: a fixed 0.02 s retry would be ~45 attempts.
    assert 5 <= len(attempts) <= 12, gaps
    assert gaps[3] > 2 * gaps[0], gaps
    warnings = [r for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1 and "not listening" in warnings[0].getMessage()
    assert not listener.connected.is_set()
    listener._failures = 5_000  # hours of outage: the delay stays capped, nothing overflows
    assert listener._delay() == 0.16


async def test_a_failed_leadership_probe_discards_the_session_that_holds_the_lock(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A probe that fails on a live session must not send the lock back into the pool."""
    engine = create_async_engine(normalize_url(pg_url))
    observer = create_async_engine(normalize_url(pg_url))
    leader = Leadership(engine)
    try:
        assert await leader.hold()
        assert leader._conn is not None
        first = await leader._conn.scalar(text("SELECT pg_backend_pid()"))
        probed = leader._conn
        real_execute = AsyncConnection.execute

        async def failing(self: AsyncConnection, *args: Any, **kwargs: Any) -> Any:
            if self is probed:
                raise TimeoutError("the probe timed out; the session lives on")
            return await real_execute(self, *args, **kwargs)

        monkeypatch.setattr(AsyncConnection, "execute", failing)
        assert await leader.hold()  # dropped the old session, took the lock on a new one
        monkeypatch.undo()
        assert leader._conn is not None and leader._conn is not probed
        now = await leader._conn.scalar(text("SELECT pg_backend_pid()"))
        async with observer.connect() as conn:
            holders = (
                await conn.execute(
                    text(
                        "SELECT pid FROM pg_locks WHERE locktype = 'advisory'"
                        " AND objid = :key AND database = (SELECT oid FROM pg_database"
                        " WHERE datname = current_database())"
                    ),
                    {"key": HEARTBEAT_LOCK},
                )
            ).scalars()
            assert list(holders) == [now] and now != first
            alive = await conn.scalar(
                text("SELECT count(*) FROM pg_stat_activity WHERE pid = :pid"), {"pid": first}
            )
        assert alive == 0, "the session whose probe failed is still open (back in the pool)"
    finally:
        await leader.close()
        await engine.dispose()
        await observer.dispose()
