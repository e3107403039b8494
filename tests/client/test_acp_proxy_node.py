"""``tapgate acp-proxy`` in front of an agent that is not Python: a JavaScript agent on the
TypeScript SDK (``tests/fakes/acp_node/agent.mjs``, ``@agentclientprotocol/sdk``).

The editor is the Python package's client, the proxy the installed ``tapgate`` script:
what crosses the proxy is ACP as another implementation writes it (camelCase ids, its own
framing), and the answers are still the agent's own option ids. The SDK is installed
into ``tests/fakes/acp_node/node_modules`` by ``.ci/run`` (``npm ci``); without it (or
without ``node``) the test skips, unless ``TAPGATE_REQUIRE_NODE=1``, as CI sets.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import cast

import pytest
from acp import PROTOCOL_VERSION, Client
from acp.client.connection import ClientSideConnection
from acp.stdio import spawn_agent_process

from tests.client.test_acp_proxy import Editor, ask, next_pending, served
from tests.client.test_hook_claude_code import TAPGATE, TOKEN, Served

__all__ = ["served"]  # the fixture, shared with the Python agent's tests

AGENT = Path(__file__).parents[1] / "fakes" / "acp_node" / "agent.mjs"
SDK = AGENT.parent / "node_modules" / "@agentclientprotocol" / "sdk"
NODE = shutil.which("node")

if NODE is None or not SDK.is_dir():
    if os.environ.get("TAPGATE_REQUIRE_NODE") == "1":
        raise RuntimeError(f"TAPGATE_REQUIRE_NODE is set but node or {SDK} is missing")
    pytest.skip("node and the ACP TypeScript SDK (npm ci in tests/fakes/acp_node)",
                allow_module_level=True)  # fmt: skip


@asynccontextmanager
async def node_session(url: str, editor: Editor) -> AsyncIterator[tuple[ClientSideConnection, str]]:
    """The proxy in front of the JavaScript agent, started as an editor starts it."""
    assert NODE is not None
    command = ("acp-proxy", "--tapgate-url", url, "--retry-for", "0")
    async with spawn_agent_process(
        cast(Client, editor), TAPGATE, *command, "--", NODE, str(AGENT),
        env={"TAPGATE_AGENT_TOKEN": TOKEN},
    ) as (conn, _):  # fmt: skip
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        session = await conn.new_session(cwd="/work/app")
        yield conn, session.session_id


async def test_a_javascript_agent_is_answered_with_its_own_options(served: Served) -> None:
    """One call approved and one denied in tapgate; the editor is never shown a prompt."""
    editor, seen = Editor(), set[str]()
    async with node_session(served.url, editor) as (conn, session):
        assert session == "js-session-1"
        turn = await ask(conn, session)
        shell = await next_pending(served, seen)
        assert (shell.tool, shell.session) == ("execute", "js-session-1")
        assert dict(shell.arguments) == {
            "command": "make deploy",
            "cwd": "/work/app",
            "title": "Run make deploy",
        }
        await served.tap(shell.id, "approve")
        write = await next_pending(served, seen)
        assert write.tool == "edit" and write.arguments["path"] == "/work/app/src/app.py"
        await served.deny(write.id, "not that file")
        assert (await asyncio.wait_for(turn, 30)).stop_reason == "end_turn"
    assert editor.said == ["execute -> js-yes-once", "edit -> js-no-once"]
    assert editor.shown == []
