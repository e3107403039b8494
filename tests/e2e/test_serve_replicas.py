"""Two ``tapgate serve`` processes on one PostgreSQL database, as a team deploys them.

An agent long-polls replica A while the approver's signed LINE tap lands on
replica B; 200 asks spread over both replicas are each pushed exactly once.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from tests.fakes import FakeLine
from tests.fakes.taps import signed_line_tap
from tests.replicas import APPROVER, AUTH, LINE_TOKEN, SECRET, ask, start_replica


@pytest.fixture
async def two_replicas(pg_url: str, tmp_path: Path) -> AsyncIterator[tuple[str, str, FakeLine]]:
    # No reconciliation sweep within a test's life: only LISTEN/NOTIFY can carry
    # a decision from one replica to the other's waiters.
    server = "reconcile_interval: 1h"
    async with FakeLine(access_token=LINE_TOKEN) as line:
        a = await start_replica(tmp_path, "a", pg_url, line.url, server=server)
        b = await start_replica(tmp_path, "b", pg_url, line.url, server=server)
        try:
            yield a.url, b.url, line
        finally:
            await asyncio.gather(a.stop(), b.stop())


async def test_a_tap_on_b_wakes_the_agent_waiting_on_a(
    two_replicas: tuple[str, str, FakeLine],
) -> None:
    a_url, b_url, _line = two_replicas
    async with aiohttp.ClientSession() as session:
        for n in range(10):
            request_id = await ask(session, a_url, n)
            poll = asyncio.create_task(
                session.get(f"{a_url}/v1/tool-calls/{request_id}?wait=30", headers=AUTH)
            )
            await asyncio.sleep(0.2)  # the long-poll parks on A
            body, headers = signed_line_tap(SECRET, APPROVER, request_id)
            async with session.post(
                b_url + "/webhooks/line", data=body, headers=headers
            ) as response:
                assert response.status == 200
            answered = await asyncio.wait_for(poll, 10)  # the sweep would take an hour
            decided = await answered.json()
            answered.release()
            assert (decided["status"], decided["decided_by"]) == ("approved", "alice")


async def test_asks_spread_over_both_replicas_are_pushed_exactly_once(
    two_replicas: tuple[str, str, FakeLine],
) -> None:
    a_url, b_url, line = two_replicas
    connector = aiohttp.TCPConnector(limit=32)
    async with aiohttp.ClientSession(connector=connector) as session:
        ids = await asyncio.gather(
            *(ask(session, (a_url, b_url)[n % 2], 1000 + n) for n in range(200))
        )
    for _ in range(600):
        if len(line.pushes) >= 200:
            break
        await asyncio.sleep(0.05)
    await asyncio.sleep(1.0)  # anything sent twice would arrive by now
    pushed = Counter(rid for p in line.pushes for rid in ids if rid in json.dumps(p.messages))
    assert len(line.pushes) == 200
    assert set(pushed) == set(ids)
    assert set(pushed.values()) == {1}
