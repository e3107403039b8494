"""``/metrics`` tells the truth about the whole system, not only this process's events.

The pending gauge is counted in the database at each scrape, so a decision
made elsewhere (``tapgate resolve`` in another process, another replica)
shows at once; failed sends are counted by channel, permanent ones apart.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import sqlite3
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import asyncpg
from aiohttp import web
from aiohttp.test_utils import TestClient

from tapgate.delivery.recording import RecordingNotifier
from tapgate.errors import DeliveryError, PermanentDeliveryError
from tapgate.gate import Gate, ToolCall
from tapgate.gate.clock import ManualClock
from tapgate.policy import Policy
from tapgate.server.app import build_app
from tapgate.server.keys import GATE, METRICS
from tapgate.store import Store
from tests.server.test_api import make_config

Client = TestClient[web.Request, web.Application]


async def scrape(client: Client, name: str, **labels: str) -> float:
    """One sample of ``name`` from the served ``/metrics`` text."""
    response = await client.get("/metrics")
    assert response.status == 200
    text = await response.text()
    wanted = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    pattern = rf"^{re.escape(name)}(?:{{{re.escape(wanted)}}})? (\S+)$" if labels else None
    for line in text.splitlines():
        if pattern is not None and (match := re.match(pattern, line)):
            return float(match.group(1))
        if pattern is None and line.startswith(name + " "):
            return float(line.split()[1])
    return 0.0


async def test_the_pending_gauge_counts_decisions_made_by_another_process(
    db_url: str,
    clock: ManualClock,
    aiohttp_client: Callable[[web.Application], Awaitable[Client]],
) -> None:
    config = make_config(db_url)
    app = build_app(config, clock=clock, notifiers=[RecordingNotifier("console")])
    client = await aiohttp_client(app)
    gate = app[GATE]
    tickets = [
        await gate.submit(ToolCall(tool="deploy", arguments={"n": n}, agent="ci-bot"))
        for n in range(3)
    ]
    assert await scrape(client, "tapgate_pending_requests") == 3
    # What `tapgate resolve` does: its own store and gate on the same database.
    async with await Store.open(db_url) as store:
        other = Gate(
            store=store,
            policy=Policy(config.policy_spec()),
            directory=config.directory(),
            clock=clock,
        )
        async with other:
            assert tickets[0].request_id is not None and tickets[1].request_id is not None
            await other.resolve(tickets[0].request_id, "approve", by="alice")
            await other.cancel(tickets[1].request_id, by="ci-bot", reason="not needed")
    assert await scrape(client, "tapgate_pending_requests") == 1


async def test_failed_sends_are_counted_by_channel_and_permanence(
    db_url: str,
    clock: ManualClock,
    aiohttp_client: Callable[[web.Application], Awaitable[Client]],
) -> None:
    notifier = RecordingNotifier("console")
    notifier.fail_next(DeliveryError("timed out"), PermanentDeliveryError("no such user"))
    app = build_app(make_config(db_url), clock=clock, notifiers=[notifier])
    client = await aiohttp_client(app)
    gate = app[GATE]
    for n in range(2):
        await gate.submit(ToolCall(tool="deploy", arguments={"n": n}, agent="ci-bot"))
    for _ in range(500):
        if len(notifier.calls) >= 2:
            break
        await asyncio.sleep(0.01)
    for _ in range(100):  # the failure is counted as the dispatcher records it
        transient = await scrape(
            client, "tapgate_delivery_failures_total", channel="console", permanent="false"
        )
        permanent = await scrape(
            client, "tapgate_delivery_failures_total", channel="console", permanent="true"
        )
        if transient + permanent >= 2:
            break
        await asyncio.sleep(0.01)
    assert (transient, permanent) == (1, 1)


async def test_a_scrape_answers_while_the_database_is_locked(
    db_url: str,
    clock: ManualClock,
    aiohttp_client: Callable[[web.Application], Awaitable[Client]],
) -> None:
    """A migration holding a lock must not hang /metrics: the last count is reported."""
    app = build_app(make_config(db_url), clock=clock, notifiers=[RecordingNotifier("console")])
    app[METRICS].pending_count_timeout = 0.3
    client = await aiohttp_client(app)
    await app[GATE].submit(ToolCall(tool="deploy", arguments={}, agent="ci-bot"))
    assert await scrape(client, "tapgate_pending_requests") == 1
    async with locked_requests(db_url):
        started = time.monotonic()
        for _ in range(3):  # one count in flight, each scrape bounded by the timeout
            assert await scrape(client, "tapgate_pending_requests") == 1
        assert time.monotonic() - started < 3
    await app[GATE].submit(ToolCall(tool="deploy", arguments={"n": 2}, agent="ci-bot"))
    for _ in range(100):  # the count left running finishes; the next scrape is current
        if await scrape(client, "tapgate_pending_requests") == 2:
            break
        await asyncio.sleep(0.1)
    assert await scrape(client, "tapgate_pending_requests") == 2


@contextlib.asynccontextmanager
async def locked_requests(db_url: str) -> AsyncIterator[None]:
    """Another session holds a lock that blocks reading ``requests``, as a migration would."""
    if db_url.startswith("sqlite"):
        conn = sqlite3.connect(db_url.removeprefix("sqlite:///"), isolation_level=None)
        conn.execute("BEGIN EXCLUSIVE")
        try:
            yield
        finally:
            conn.execute("ROLLBACK")
            conn.close()
        return
    pg = await asyncpg.connect(db_url)
    try:
        await pg.execute("BEGIN")
        await pg.execute("LOCK TABLE requests IN ACCESS EXCLUSIVE MODE")
        yield
    finally:
        await pg.close()
