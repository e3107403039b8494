"""A real ``tapgate serve`` that a test stops with SIGTERM and starts again on the same port.

What a deploy or a crash-and-restart does to the agents waiting on a server:
the process goes (SIGTERM, so it releases its parked long-polls and exits),
nothing listens for a while, and a new process comes up at the same address
on the same SQLite file, where the requests survived. Each start is the
installed console script (:func:`tests.replicas.start_replica`) with its own
log, so a test can tell which process served which request.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import aiohttp

from tests.fakes import FakeLine
from tests.fakes.taps import free_port, signed_line_tap
from tests.replicas import APPROVER, AUTH, LINE_TOKEN, SECRET, Replica, start_replica

__all__ = ["POLICY", "Restartable", "assert_reattached", "restartable", "ride_out", "within"]

T = TypeVar("T")

POLICY = (
    "{default_timeout: 10m, rules: [{tool: deploy, action: ask}, {tool: 'mcp__*', action: ask}]}"
)
"""Every client here asks about ``deploy`` (or an MCP tool) and waits for a human."""


@dataclass
class Restartable:
    """One server address and database, served by one ``tapgate serve`` process at a time."""

    tmp: Path
    line: FakeLine
    policy: str
    port: int = field(default_factory=free_port)
    current: Replica | None = None
    starts: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        """A new process on the same port and the same SQLite file."""
        assert self.current is None
        self.starts += 1
        db_url = f"sqlite:///{self.tmp / 'tapgate.db'}"
        self.current = await start_replica(
            self.tmp,
            f"serve{self.starts}",
            db_url,
            self.line.url,
            policy=self.policy,
            port=self.port,
            server="access_log: all",  # assert_reattached reads the GETs' 200 lines
        )

    async def stop(self) -> None:
        """SIGTERM, as a deploy sends it; the process must exit cleanly."""
        assert self.current is not None
        replica, self.current = self.current, None
        assert await replica.stop() == 0

    async def pending(self) -> str:
        """The id of the one pending request, once the client under test has made it."""
        [request_id] = await self.pending_ids(1)
        return request_id

    async def pending_ids(self, count: int) -> list[str]:
        """The ids of the ``count`` pending requests, once the clients under test made them."""
        deadline = time.monotonic() + 30
        async with aiohttp.ClientSession() as session:
            while time.monotonic() < deadline:
                async with session.get(
                    self.url + "/v1/tool-calls?status=pending", headers=AUTH
                ) as response:
                    found = [str(state["id"]) for state in (await response.json())["tool_calls"]]
                if len(found) >= count:
                    assert len(found) == count, found
                    return found
                await asyncio.sleep(0.02)
        raise AssertionError(f"the clients never made their {count} request(s)")

    async def tap(self, request_id: str) -> None:
        """Alice approves in LINE: a signed webhook call to the process serving now."""
        body, headers = signed_line_tap(SECRET, APPROVER, request_id, "approve")
        async with (
            aiohttp.ClientSession() as session,
            session.post(self.url + "/webhooks/line", data=body, headers=headers) as response,
        ):
            assert response.status == 200, await response.text()

    def log(self, start: int) -> str:
        """What the ``start``-th process (from 1) logged, its access log included."""
        return (self.tmp / f"serve{start}.log").read_text(errors="replace")


@contextlib.asynccontextmanager
async def restartable(tmp: Path, policy: str = POLICY) -> AsyncIterator[Restartable]:
    """A started server whose process the test may stop and start; stopped at the end."""
    async with FakeLine(access_token=LINE_TOKEN) as line:
        server = Restartable(tmp=tmp, line=line, policy=policy)
        await server.start()
        try:
            yield server
        finally:
            if server.current is not None:
                await server.current.stop()


async def ride_out(server: Restartable, waiting: asyncio.Future[T], down: float) -> str:
    """Stop the server under a waiting client, keep it down ``down`` s, restart it, approve.

    The client must still be waiting when the new process comes up; the tap
    lands on the new process. Returns the request's id.
    """
    request_id = await server.pending()
    await asyncio.sleep(0.3)  # the client is parked in its long-poll now
    await server.stop()
    await asyncio.sleep(down)
    assert not waiting.done(), "the client gave up while the server was down"
    await server.start()
    await server.tap(request_id)
    return request_id


async def assert_reattached(server: Restartable, request_id: str) -> None:
    """The restarted process answered a GET of the request, and nobody re-submitted it."""
    line = f'"GET /v1/tool-calls/{request_id}" 200'
    for _ in range(250):  # the access log is written just after the answer is sent
        if line in server.log(server.starts):
            break
        await asyncio.sleep(0.02)
    assert line in server.log(server.starts), server.log(server.starts)[-2000:]
    logs = "".join(server.log(n) for n in range(1, server.starts + 1))
    assert logs.count('"POST /v1/tool-calls" 20') == 1  # one submit, never re-sent


async def within(seconds: float, awaitable: Awaitable[T]) -> T:
    """``awaitable``, failing the test instead of hanging past ``seconds``."""
    return await asyncio.wait_for(awaitable, seconds)
