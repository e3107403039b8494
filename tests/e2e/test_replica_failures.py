"""Replicas on one PostgreSQL when things break: a replica dies, the database restarts.

Real ``tapgate serve`` processes (tests/replicas.py), a real PostgreSQL and the
fake LINE API. A replica killed with SIGKILL in the middle of a send leaves its
outbox rows to the other replica once their lease runs out; the re-send
carries the same ``X-Line-Retry-Key``, so LINE shows each message once. A
PostgreSQL restart loses no request, and agents parked on either replica are
still woken by taps made after it.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.conftest import skip_without_postgresql
from tests.fakes import FakeLine, Fault
from tests.fakes.taps import free_port, signed_line_tap
from tests.replicas import APPROVER, AUTH, LINE_TOKEN, SECRET, Replica, ask, start_replica

SCRIPT = Path(__file__).parents[2] / "scripts" / "pg-test-server"


async def until(predicate: Callable[[], bool | Awaitable[bool]], timeout: float, what: str) -> None:
    """Poll ``predicate`` every 50 ms until it holds; fail naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = predicate()
        if await result if isinstance(result, Awaitable) else result:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


async def metric(session: aiohttp.ClientSession, replica: Replica, name: str) -> float:
    """The sum of every sample of ``name`` in the replica's ``/metrics``."""
    async with session.get(replica.url + "/metrics") as response:
        text = await response.text()
    pattern = re.compile(rf"^{re.escape(name)}(?:{{[^}}]*}})? (\S+)$", re.MULTILINE)
    return sum(float(value) for value in pattern.findall(text))


async def status_of(session: aiohttp.ClientSession, replica: Replica, request_id: str) -> Any:
    async with session.get(f"{replica.url}/v1/tool-calls/{request_id}", headers=AUTH) as response:
        assert response.status == 200, await response.text()
        return await response.json()


def pushes_per_request(line: FakeLine, ids: list[str]) -> Counter[str]:
    """How many delivered pushes mention each request id."""
    return Counter(rid for push in line.pushes for rid in ids if rid in str(push.messages))


async def test_a_replica_killed_mid_send_leaves_delivery_and_expiry_to_the_other(
    pg_url: str, tmp_path: Path
) -> None:
    settings: dict[str, Any] = {
        "server": "delivery_lease: 2s, heartbeat_interval: 0.2s",
        # Long enough for B to start and deliver on a loaded machine before expiry.
        "policy": "{default_timeout: 20s, rules: [{tool: deploy, action: ask}]}",
        "line": "timeout: 60",
    }
    async with FakeLine(access_token=LINE_TOKEN) as line, aiohttp.ClientSession() as session:
        # LINE accepts A's first push, then never answers: A is mid-send. LINE
        # is not paced, so two rows A claimed together would go out together:
        # the other four are asked only once the first push is on the wire,
        # and wait unclaimed behind A's delivery pass, which waits on that send.
        line.script("push", Fault.timeout(120, deliver=True))
        a = await start_replica(tmp_path, "a", pg_url, line.url, **settings)
        replicas = [a]
        try:
            ids = [await ask(session, a.url, 0)]
            await until(lambda: len(line.pushes) == 1, 20, "A's first push to reach LINE")
            ids += [await ask(session, a.url, n) for n in range(1, 5)]
            await a.kill()
            assert a.proc.returncode == -9

            b = await start_replica(tmp_path, "b", pg_url, line.url, **settings)
            replicas.append(b)

            # B takes the rows over once A's lease runs out; the one A was
            # sending goes again with A's retry key and LINE answers 409
            # "already accepted", which counts as delivered.
            async def delivered() -> bool:
                return await metric(session, b, "tapgate_deliveries_total") == 5

            await until(delivered, 38, "B to record the five deliveries")
            keys = Counter(
                r.headers.get("x-line-retry-key") for r in line.requests if r.endpoint == "push"
            )
            assert sorted(keys.values()) == [1, 1, 1, 1, 2], keys
            assert keys[line.pushes[0].retry_key] == 2
            assert pushes_per_request(line, ids) == dict.fromkeys(ids, 1)

            # Expiry runs on B (A held the heartbeat lock until it died).
            polls = [
                session.get(f"{b.url}/v1/tool-calls/{rid}?wait=50", headers=AUTH) for rid in ids
            ]
            for answered in await asyncio.gather(*polls):
                body = await answered.json()
                answered.release()
                assert (body.get("status"), body.get("decision")) == ("expired", "deny"), body
            assert len(line.pushes) == 5
            assert await metric(session, b, "tapgate_delivery_failures_total") == 0
        finally:
            for replica in replicas:
                if replica.proc.returncode is None:
                    await replica.stop()


@dataclass
class PrivatePostgres:
    """A PostgreSQL server this test owns, so it may stop and start it."""

    directory: Path
    port: int
    url: str

    def stop(self) -> None:
        subprocess.run([str(SCRIPT), "stop", str(self.directory)], check=True)

    def start(self) -> None:
        subprocess.run(
            [str(SCRIPT), "start", str(self.directory), str(self.port)],
            check=True,
            capture_output=True,
        )


@pytest.fixture
def private_pg() -> Iterator[PrivatePostgres]:
    skip_without_postgresql()  # a server of its own: it stops and starts it
    directory = Path(tempfile.mkdtemp(prefix="tapgate-pg-restart-"))
    port = free_port()
    started = subprocess.run(
        [str(SCRIPT), "start", str(directory), str(port)],
        check=True,
        capture_output=True,
        text=True,
    )
    try:
        yield PrivatePostgres(directory, port, started.stdout.strip())
    finally:
        subprocess.run([str(SCRIPT), "stop", str(directory)], check=False, capture_output=True)
        shutil.rmtree(directory, ignore_errors=True)


async def test_a_postgresql_restart_loses_nothing_and_waiters_still_wake(
    private_pg: PrivatePostgres, tmp_path: Path
) -> None:
    async with FakeLine(access_token=LINE_TOKEN) as line, aiohttp.ClientSession() as session:
        a = await start_replica(tmp_path, "a", private_pg.url, line.url)
        b = await start_replica(tmp_path, "b", private_pg.url, line.url)
        try:
            ids = [await ask(session, (a, b)[n % 2].url, n) for n in range(4)]
            await until(lambda: len(line.pushes) == 4, 10, "the four pushes")
            polls = {
                rid: asyncio.create_task(
                    session.get(f"{(a, b)[n % 2].url}/v1/tool-calls/{rid}?wait=60", headers=AUTH)
                )
                for n, rid in enumerate(ids)
            }
            await asyncio.sleep(0.3)  # parked

            await asyncio.to_thread(private_pg.stop)
            async with session.get(a.url + "/readyz") as response:
                assert response.status == 503
            async with session.post(
                a.url + "/v1/tool-calls", headers=AUTH, json={"tool": "deploy", "arguments": {}}
            ) as response:
                assert response.status == 503  # the client retries it
                assert response.headers["Retry-After"] == "1"
                assert (await response.json())["error"]["code"] == "unavailable"
            await asyncio.sleep(1.0)
            assert not any(poll.done() for poll in polls.values())  # still parked
            await asyncio.to_thread(private_pg.start)

            async def ready() -> bool:
                for replica in (a, b):
                    async with session.get(replica.url + "/readyz") as response:
                        if response.status != 200:
                            return False
                return True

            await until(ready, 15, "both replicas ready again")
            # Every tap lands on the *other* replica than the agent's long-poll.
            for n, rid in enumerate(ids):
                body, headers = signed_line_tap(SECRET, APPROVER, rid)
                tapped = (b, a)[n % 2]
                async with session.post(
                    tapped.url + "/webhooks/line", data=body, headers=headers
                ) as response:
                    assert response.status == 200
                start = time.monotonic()
                answered = await asyncio.wait_for(polls[rid], 10)
                decided = await answered.json()
                answered.release()
                assert (decided["status"], decided["decided_by"]) == ("approved", "alice")
                assert time.monotonic() - start < 2.0  # NOTIFY or the one-second sweep

            # Nothing lost or doubled, and the replicas take new work.
            for rid in ids:
                assert (await status_of(session, a, rid))["status"] == "approved"
            assert pushes_per_request(line, ids) == dict.fromkeys(ids, 1)
            fresh = await ask(session, b.url, 99)
            await until(lambda: len(line.pushes) == 5, 10, "the push after the restart")
            assert fresh in str(line.pushes[-1].messages)
        finally:
            await asyncio.gather(a.stop(), b.stop())
