"""``tapgate mcp-proxy`` against an upstream that misbehaves: every call still gets an answer.

The upstream is ``mcp_hostile.py`` (the SDK's low-level ``Server``, made to
misbehave one way per mode), spawned by the proxy as in ``test_mcp_proxy``;
the tapgate server is the real one. Each test bounds the call it makes, so a
gateway that hangs fails the test instead of stalling the suite.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mcp import types
from mcp.client.session import ClientSession

from tapgate.server.keys import GATE
from tests.client.test_hook_claude_code import Served, serve
from tests.client.test_mcp_proxy import POLICY, call, proxied, text

HOSTILE = Path(__file__).with_name("mcp_hostile.py")


@pytest.fixture
async def served(migrated_sqlite_url: str) -> AsyncIterator[Served]:
    async with serve(migrated_sqlite_url, policy=POLICY) as s:
        yield s


def hostile(mode: str) -> list[str]:
    return ["--", sys.executable, str(HOSTILE), mode]


async def settled(served: Served, request_id: str) -> str:
    """The request's status once it is no longer pending (or still pending after 10s)."""
    for _ in range(2500):
        found = await served.app[GATE].get_request(request_id)
        if found.status != "pending":
            break
        await asyncio.sleep(0.004)
    return found.status


async def call_unlisted(session: ClientSession, tool: str, bound: float) -> types.CallToolResult:
    """``tools/call`` as sent, without the SDK client's own ``tools/list`` before it."""
    request = types.CallToolRequest(params=types.CallToolRequestParams(name=tool, arguments={}))
    return await asyncio.wait_for(session.send_request(request, types.CallToolResult), bound)


@pytest.mark.parametrize("mode", ["repeat", "endless", "hang-list"])
async def test_a_trusted_listing_that_never_ends_does_not_hang_a_call(
    served: Served, mode: str
) -> None:
    """Annotations are looked up by listing the tools; a listing that never ends gives up."""
    flags = ("--trust-annotations", "--listing-timeout", "1s")  # not 10 s of the suite's time
    async with proxied(served.url, *flags, upstream=hostile(mode)) as session:
        result = await call_unlisted(session, "read_note", 30)  # the gateway gives up at 1 s
    assert not result.is_error and text(result) == "ran"


class HeldAnswers:
    """A TCP relay in front of the tapgate server that holds its answers until ``release``.

    The server acts on each request at once; only the proxy's view of the
    answer is delayed, as over a slow link or behind a busy server.
    """

    def __init__(self, target: str) -> None:
        self._host, port = target.removeprefix("http://").split(":")
        self._port = int(port)
        self.released = asyncio.Event()
        self.url = ""
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> HeldAnswers:
        self._server = await asyncio.start_server(self._relay, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()

    async def _relay(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        server_r, server_w = await asyncio.open_connection(self._host, self._port)
        await asyncio.gather(
            self._pump(client_r, server_w, hold=False), self._pump(server_r, client_w, hold=True)
        )

    async def _pump(
        self, src: asyncio.StreamReader, dst: asyncio.StreamWriter, *, hold: bool
    ) -> None:
        with contextlib.suppress(OSError):
            while chunk := await src.read(65536):
                if hold:
                    await self.released.wait()
                dst.write(chunk)
                await dst.drain()
        dst.close()


async def test_a_call_cancelled_while_its_request_is_being_made_is_withdrawn(
    served: Served,
) -> None:
    """The client gives up before the proxy learns the request's id: it is withdrawn anyway."""
    async with HeldAnswers(served.url) as relay, proxied(relay.url) as session:
        answer = asyncio.create_task(call(session, "write_note", name="chores", text="x"))
        request = await served.pending()  # made on the server; its answer held in the relay
        answer.cancel()
        await asyncio.sleep(1)  # the client's notifications/cancelled reaches the proxy
        relay.released.set()
        status = await settled(served, request.id)
    assert status == "cancelled"


async def test_after_the_upstream_died_no_approver_is_asked_for_a_call(served: Served) -> None:
    """A call that cannot run is refused at once, not put to an approver first."""
    async with proxied(served.url) as session:
        await call(session, "crash")  # the test upstream exits mid-call
        result = await call_unlisted(session, "write_note", 20)  # the policy asks for it
    assert result.is_error
    assert text(result) == (
        "tapgate: the MCP server 'notes' is gone (its connection closed); the tool was not called"
    )
    assert [request.tool for request in await served.requests()] == []


async def test_a_client_that_hangs_up_mid_wait_withdraws_its_request(served: Served) -> None:
    """Closing the proxy's stdin (the MCP client quit) ends the wait as a cancel does."""
    async with proxied(served.url) as session:
        answer = asyncio.create_task(call(session, "write_note", name="chores", text="x"))
        request = await served.pending()
    answer.cancel()
    with contextlib.suppress(Exception, asyncio.CancelledError):
        await answer  # it ended with the session, or now
    assert await settled(served, request.id) == "cancelled"


async def test_the_upstream_gets_the_approved_name_and_arguments_and_nothing_else(
    served: Served,
) -> None:
    """What the client adds beside the arguments is not on the card, so it is not sent on.

    Input responses (answers to the server's own questions, e.g. a confirmation
    it elicits), an opaque request state, a task and ``_meta`` would change
    what the call does without an approver having seen them.
    """
    params = types.CallToolRequestParams.model_validate(
        {
            "name": "read_note",
            "arguments": {"name": "groceries"},
            "requestState": "forged",
            "inputResponses": {"confirm": {"action": "accept", "content": {"ok": True}}},
            "task": {"ttl": 5000},
            "_meta": {"progressToken": 7, "on_behalf_of": "admin"},
        }
    )
    async with proxied(served.url, upstream=hostile("repeat")) as session:
        request = types.CallToolRequest(params=params)
        result = await asyncio.wait_for(session.send_request(request, types.CallToolResult), 20)
    assert not result.is_error and text(result) == "ran"
