"""``tapgate acp-proxy``: a real ACP client, the proxy as a real process, a real ACP agent.

The client is the ``agent-client-protocol`` package's own
(``spawn_agent_process``, as an editor starts an agent server), the proxy is
the installed ``tapgate`` script and the agent ``tests/fakes/acp_agent.py``
(the package's ``run_agent``), which asks permission for a shell command and
a file write with option ids of its own. tapgate is the real server
(``serve`` of the Claude Code hook's tests); approvals arrive as signed LINE
taps or through the gate, as the chat webhooks make them.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import pytest
from acp import PROTOCOL_VERSION, Client, text_block
from acp.client.connection import ClientSideConnection
from acp.schema import (
    AgentMessageChunk,
    AllowedOutcome,
    PermissionOption,
    RequestPermissionResponse,
    ToolCallUpdate,
)
from acp.stdio import spawn_agent_process

from tapgate.server.keys import GATE
from tests.client.test_hook_claude_code import TAPGATE, TOKEN, Served, serve

AGENT = str(Path(__file__).parents[1] / "fakes" / "acp_agent.py")
POLICY: dict[str, Any] = {
    "default_approvers": ["alice"],
    "default_timeout": "10m",
    "tools": {
        "execute": {"risk": "write", "shell": "command"},
        "edit": {"risk": "write", "fingerprint": ["path"]},
    },
}


class Editor:
    """The ACP client: records what the agent says and every prompt it is shown."""

    def __init__(self, local_answer: str | None = None) -> None:
        self.said: list[str] = []
        self.shown: list[str] = []
        self.local_answer = local_answer
        self.release: dict[str, asyncio.Event] = {}
        """Per tool call id: set when the person at the editor answers its prompt."""

    async def request_permission(
        self, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption], **_: Any
    ) -> RequestPermissionResponse:
        self.shown.append(tool_call.tool_call_id)
        # the person at the editor takes their time
        await self.release.setdefault(tool_call.tool_call_id, asyncio.Event()).wait()
        assert self.local_answer is not None
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=self.local_answer)
        )

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        if isinstance(update, AgentMessageChunk):
            self.said.append(update.content.text)


@asynccontextmanager
async def editor_session(
    url: str, editor: Editor, *flags: str
) -> AsyncIterator[tuple[ClientSideConnection, str]]:
    """The proxy started as an editor starts an agent server; an initialized session."""
    command = ("acp-proxy", "--tapgate-url", url, "--retry-for", "0", *flags)
    env = {"TAPGATE_AGENT_TOKEN": TOKEN}
    async with spawn_agent_process(
        cast(Client, editor), TAPGATE, *command, "--", sys.executable, AGENT, env=env
    ) as (conn, _):
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        session = await conn.new_session(cwd="/work/app")
        yield conn, session.session_id


async def ask(conn: ClientSideConnection, session: str, text: str = "go") -> asyncio.Task[Any]:
    return asyncio.create_task(conn.prompt(session_id=session, prompt=[text_block(text)]))


async def next_pending(served: Served, seen: set[str]) -> Any:
    """The next pending request the proxy created (one not in ``seen``)."""
    for _ in range(5000):
        for found in await served.app[GATE].store.list_requests(status="pending"):
            if found.id not in seen:
                seen.add(found.id)
                return found
        await asyncio.sleep(0.005)
    raise AssertionError("no new pending request")


@pytest.fixture
async def served(migrated_sqlite_url: str) -> AsyncIterator[Served]:
    async with serve(migrated_sqlite_url, policy=POLICY) as s:
        yield s


async def test_tapgate_answers_with_the_agents_own_options(served: Served) -> None:
    """One approved, one denied, in tapgate; the editor is never shown a prompt."""
    editor, seen = Editor(), set[str]()
    async with editor_session(served.url, editor) as (conn, session):
        turn = await ask(conn, session)
        shell = await next_pending(served, seen)
        assert (shell.agent, shell.tool, shell.session) == ("claude", "execute", "sess-app")
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
    assert editor.said == ["execute -> yes-once", "edit -> no-once"]
    assert editor.shown == []


async def test_a_remembered_approval_selects_the_agents_allow_always(served: Served) -> None:
    editor, seen = Editor(), set[str]()
    async with editor_session(served.url, editor) as (conn, session):
        turn = await ask(conn, session)
        shell = await next_pending(served, seen)
        await served.app[GATE].resolve(shell.id, "approve", by="alice", scope="session")
        await served.deny((await next_pending(served, seen)).id, "no")
        await asyncio.wait_for(turn, 30)
        turn = await ask(conn, session)  # the same calls again, answered at once:
        await asyncio.wait_for(turn, 30)  # the grant allows, the recent deny is reused
    assert editor.said == [
        "execute -> yes-always",  # the very call approved for the session
        "edit -> no-once",
        "execute -> yes-always",  # answered by the grant that approval recorded
        "edit -> no-once",
    ]


async def test_always_tapped_in_line_selects_allow_always_on_the_call_it_decides(
    served: Served,
) -> None:
    editor, seen = Editor(), set[str]()
    async with editor_session(served.url, editor) as (conn, session):
        turn = await ask(conn, session)
        shell = await next_pending(served, seen)
        await served.tap(shell.id, "approve_always")  # Alice's "Always allow" in LINE
        write = await next_pending(served, seen)
        await served.tap(write.id, "approve")  # this call only
        await asyncio.wait_for(turn, 30)
    assert editor.said == ["execute -> yes-always", "edit -> yes-once"]
    assert (await served.app[GATE].get_request(shell.id)).scope == "always"


async def test_a_cancelled_turn_withdraws_the_request(served: Served) -> None:
    editor, seen = Editor(), set[str]()
    async with editor_session(served.url, editor) as (conn, session):
        turn = await ask(conn, session)
        shell = await next_pending(served, seen)
        await conn.cancel(session_id=session)
        assert (await asyncio.wait_for(turn, 30)).stop_reason == "cancelled"
        for _ in range(1000):
            if (await served.app[GATE].get_request(shell.id)).status != "pending":
                break
            await asyncio.sleep(0.01)
        assert (await served.app[GATE].get_request(shell.id)).status == "cancelled"
    assert editor.said == ["execute -> cancelled"]


async def test_an_unreachable_tapgate_answers_cancelled_never_allow(closed_port: int) -> None:
    editor = Editor()
    async with editor_session(f"http://127.0.0.1:{closed_port}", editor) as (conn, session):
        turn = await ask(conn, session)
        assert (await asyncio.wait_for(turn, 60)).stop_reason == "cancelled"
    assert editor.said == ["execute -> cancelled"]
    assert editor.shown == []


async def test_other_messages_pass_both_ways(served: Served) -> None:
    editor = Editor()
    async with editor_session(served.url, editor) as (conn, session):
        reply = await asyncio.wait_for(await ask(conn, session, "ping"), 30)
    assert reply.stop_reason == "end_turn" and editor.said == ["pong"]
    assert await served.app[GATE].store.list_requests() == []


async def test_asking_locally_too_the_first_answer_wins(served: Served) -> None:
    """The editor answers first: its option goes to the agent, the tapgate request is withdrawn;
    then tapgate answers first: the editor's prompt is withdrawn and its late answer dropped."""
    editor, seen = Editor(local_answer="yes-once"), set[str]()
    async with editor_session(served.url, editor, "--ask-locally-too") as (conn, session):
        turn = await ask(conn, session)
        shell = await next_pending(served, seen)
        editor.release.setdefault("call-1", asyncio.Event()).set()  # approved in the editor
        write = await next_pending(served, seen)
        assert (await served.app[GATE].get_request(shell.id)).status == "cancelled"
        await served.deny(write.id, "not that file")  # tapgate first this time
        assert (await asyncio.wait_for(turn, 30)).stop_reason == "end_turn"
        editor.release["call-2"].set()  # the editor's late answer must not reach the agent
        reply = await asyncio.wait_for(await ask(conn, session, "ping"), 30)
        assert reply.stop_reason == "end_turn"
    assert editor.shown == ["call-1", "call-2"]
    assert editor.said == ["execute -> yes-once", "edit -> no-once", "pong"]
