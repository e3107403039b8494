"""A tap is never lost to a crash (decision 0017-record-before-acknowledge), with real ``tapgate
serve`` processes.

The gap between the 200 and the decision is made observable by the test-only
``TAPGATE_TEST_APPLY_DELAY`` (bot/test_hooks.py): the server stores the tap,
answers 200, and waits before applying it. The test SIGKILLs it in that gap,
starts another server on the same SQLite file, and checks the waiting agent
gets the decision, the audit holds exactly one, and the inbox is empty.
The other side of the gap: a server killed while its INSERT waits for the
database never answered 200, so LINE's redelivery decides the tap once.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tapgate.server.test_hooks import APPLY_DELAY_VARIABLE
from tapgate.store import Store
from tests.e2e.test_replica_failures import status_of, until
from tests.fakes import FakeLine, FakeSlack
from tests.fakes.taps import signed_line_tap, signed_slack_tap
from tests.replicas import (
    APPROVER,
    AUTH,
    LINE_TOKEN,
    SECRET,
    SLACK_APPROVER,
    SLACK_SECRET,
    Replica,
    ask,
    start_replica,
)

DELAY = {APPLY_DELAY_VARIABLE: "60"}  # far longer than the test needs: the kill comes first


@asynccontextmanager
async def opened(db_url: str) -> AsyncIterator[Store]:
    """The servers' database, read from the test process."""
    store = await Store.open(db_url, migrate=False)
    try:
        yield store
    finally:
        await store.close()


async def decisions_in_audit(db_url: str, request_id: str) -> list[str]:
    async with opened(db_url) as store:
        lines = await store.audit_log(request_id=request_id)
    return [line.event for line in lines if line.event in ("approved", "denied", "refused")]


async def inbox_rows(db_url: str) -> int:
    async with opened(db_url) as store:
        return await store.inbox.count()


async def long_poll(session: aiohttp.ClientSession, replica: Replica, request_id: str) -> Any:
    url = f"{replica.url}/v1/tool-calls/{request_id}?wait=30"
    async with session.get(url, headers=AUTH) as response:
        assert response.status == 200, await response.text()
        return await response.json()


async def stop_all(*replicas: Replica) -> None:
    for replica in replicas:
        if replica.proc.returncode is None:
            await replica.stop()


async def acknowledged_then_killed(
    session: aiohttp.ClientSession,
    replica: Replica,
    db_url: str,
    rid: str,
    route: str,
    signed: tuple[bytes, dict[str, str]],
) -> None:
    """POST the tap (200), check it is stored and not applied, then SIGKILL the server."""
    body, headers = signed
    async with session.post(replica.url + route, data=body, headers=headers) as response:
        assert response.status == 200, await response.text()
    assert (await status_of(session, replica, rid))["status"] == "pending"
    assert await inbox_rows(db_url) == 1  # acknowledged, stored, not yet applied
    await replica.kill()
    assert replica.proc.returncode == -9


async def test_a_line_tap_killed_between_ack_and_apply_is_applied_once_on_restart(
    tmp_path: Path,
) -> None:
    db_url = f"sqlite:///{tmp_path / 'tapgate.db'}"
    async with FakeLine(access_token=LINE_TOKEN) as line, aiohttp.ClientSession() as session:
        a = await start_replica(tmp_path, "a", db_url, line.url, env=DELAY)
        replicas = [a]
        try:
            rid = await ask(session, a.url, 1)
            await until(lambda: len(line.pushes) == 1, 10, "the approval push")
            tap = signed_line_tap(SECRET, APPROVER, rid)
            await acknowledged_then_killed(session, a, db_url, rid, "/webhooks/line", tap)
            assert line.replies == []  # the reply comes after the decision

            b = await start_replica(tmp_path, "b", db_url, line.url)
            replicas.append(b)
            decided = await long_poll(session, b, rid)
            assert (decided["status"], decided["decided_by"]) == ("approved", "alice")
            assert await decisions_in_audit(db_url, rid) == ["approved"]
            assert await inbox_rows(db_url) == 0
            await until(lambda: len(line.replies) == 1, 10, "the reply to the replayed tap")

            # A second restart finds nothing to replay: still one decision, one reply.
            await b.stop()
            c = await start_replica(tmp_path, "c", db_url, line.url)
            replicas.append(c)
            assert await decisions_in_audit(db_url, rid) == ["approved"]
            assert len(line.replies) == 1
        finally:
            await stop_all(*replicas)


async def test_a_slack_tap_killed_between_ack_and_apply_is_applied_once_on_restart(
    tmp_path: Path,
) -> None:
    db_url = f"sqlite:///{tmp_path / 'tapgate.db'}"
    async with (
        FakeLine(access_token=LINE_TOKEN) as line,
        FakeSlack() as slack,
        aiohttp.ClientSession() as session,
    ):
        a = await start_replica(tmp_path, "a", db_url, line.url, slack_url=slack.url, env=DELAY)
        replicas = [a]
        try:
            rid = await ask(session, a.url, 1)
            await until(lambda: len(slack.posts) == 1, 10, "the approval message on Slack")
            channel = slack.posts[0].channel
            tap = signed_slack_tap(SLACK_SECRET, SLACK_APPROVER, rid, channel=channel)
            await acknowledged_then_killed(session, a, db_url, rid, "/webhooks/slack", tap)

            b = await start_replica(tmp_path, "b", db_url, line.url, slack_url=slack.url)
            replicas.append(b)
            decided = await long_poll(session, b, rid)
            assert (decided["status"], decided["decided_by"]) == ("approved", "alice")
            assert await decisions_in_audit(db_url, rid) == ["approved"]
            assert await inbox_rows(db_url) == 0
            # The approval message is rewritten once, as for any decision; nobody is
            # told anything ephemerally (an applied tap needs no answer).
            await until(lambda: len(slack.updates) >= 1, 10, "the message rewritten")
            assert slack.ephemerals == []
        finally:
            await stop_all(*replicas)


async def test_a_crash_before_the_insert_commits_sends_no_200_and_the_redelivery_decides_once(
    tmp_path: Path,
) -> None:
    db_file = tmp_path / "tapgate.db"
    db_url = f"sqlite:///{db_file}"
    async with FakeLine(access_token=LINE_TOKEN) as line, aiohttp.ClientSession() as session:
        a = await start_replica(tmp_path, "a", db_url, line.url)
        replicas = [a]
        try:
            rid = await ask(session, a.url, 1)
            await until(lambda: len(line.pushes) == 1, 10, "the approval push")
            body, headers = signed_line_tap(SECRET, APPROVER, rid)
            # Another writer holds SQLite's write lock: the tap's INSERT waits for it.
            locker = sqlite3.connect(db_file, isolation_level=None)
            locker.execute("BEGIN IMMEDIATE")
            sent = asyncio.create_task(
                session.post(a.url + "/webhooks/line", data=body, headers=headers)
            )
            await asyncio.sleep(1.0)
            assert not sent.done()  # no answer while the INSERT has not committed
            await a.kill()
            with pytest.raises(aiohttp.ClientError):
                await sent  # the connection died without a status line: no 200
            locker.execute("ROLLBACK")
            locker.close()
            assert await inbox_rows(db_url) == 0

            b = await start_replica(tmp_path, "b", db_url, line.url)
            replicas.append(b)
            assert (await status_of(session, b, rid))["status"] == "pending"
            # LINE sends the event again (no 200 came): same bytes, same event id.
            async with session.post(b.url + "/webhooks/line", data=body, headers=headers) as r:
                assert r.status == 200
            decided = await long_poll(session, b, rid)
            assert (decided["status"], decided["decided_by"]) == ("approved", "alice")
            assert await decisions_in_audit(db_url, rid) == ["approved"]
        finally:
            await stop_all(*replicas)
