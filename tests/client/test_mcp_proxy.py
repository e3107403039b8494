"""``tapgate mcp-proxy``: a real MCP client, through the gateway, to a real MCP server.

The client is the SDK's ``ClientSession`` over stdio, spawning the installed
``tapgate mcp-proxy`` script as an MCP client config would; the upstream is
``mcp_upstream.py`` (the SDK's ``MCPServer``), spawned by the proxy. The
tapgate server is the real one of ``test_hook_claude_code`` (``build_app`` on a
loopback port, SQLite, the LINE webhook); approvals arrive as signed LINE taps.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.types import CallToolResult, TextContent

from tapgate.decisions.edits import approve_edit
from tapgate.decisions.taps import Tap
from tapgate.gate.clock import ManualClock
from tapgate.server.keys import GATE
from tests.client.test_hook_claude_code import ALICE, TAPGATE, TOKEN, Served, cli, serve
from tests.fakes.taps import free_port

UPSTREAM = Path(__file__).with_name("mcp_upstream.py")
NAME = "notes"

POLICY: dict[str, Any] = {
    "default_approvers": ["alice"],
    "default_timeout": "10m",
    "rules": [
        {"tool": "mcp__notes__read_note", "action": "allow"},
        {"tool": "mcp__notes__write_note", "action": "ask"},
        {"tool": "mcp__notes__delete_note", "action": "deny", "reason": "notes are kept"},
        {"tool": "mcp__notes__crash", "action": "allow"},
        {"tool": "mcp__notes__environment", "action": "allow"},
    ],
}
"""No rule names ``peek`` or ``wipe``: their risk decides (read_only allow, write ask,
destructive deny)."""


@pytest.fixture
async def served(migrated_sqlite_url: str) -> AsyncIterator[Served]:
    async with serve(migrated_sqlite_url, policy=POLICY) as s:
        yield s


@pytest.fixture
async def served_manual(migrated_sqlite_url: str) -> AsyncIterator[Served]:
    async with serve(migrated_sqlite_url, ManualClock(), policy=POLICY) as s:
        yield s


def _upstream_argv() -> list[str]:
    return ["--", sys.executable, str(UPSTREAM)]


@contextlib.asynccontextmanager
async def proxied(
    tapgate_url: str, *flags: str, upstream: list[str] | None = None, token: str = TOKEN
) -> AsyncIterator[ClientSession]:
    """An MCP client session with ``tapgate mcp-proxy`` in front of the test upstream."""
    argv = ["mcp-proxy", "--name", NAME, *flags, *(upstream or _upstream_argv())]
    env = {"TAPGATE_URL": tapgate_url, "TAPGATE_AGENT_TOKEN": token}
    params = StdioServerParameters(command=TAPGATE, args=argv, env=env)
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write, read_timeout_seconds=60) as session,
    ):
        await session.initialize()
        yield session


@contextlib.asynccontextmanager
async def direct() -> AsyncIterator[ClientSession]:
    """An MCP client session straight to the upstream: what the proxy must reproduce."""
    params = StdioServerParameters(command=sys.executable, args=[str(UPSTREAM)])
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write, read_timeout_seconds=60) as session,
    ):
        await session.initialize()
        yield session


def text(result: CallToolResult) -> str:
    assert len(result.content) == 1 and isinstance(result.content[0], TextContent)
    return result.content[0].text


async def call(session: ClientSession, tool: str, **arguments: Any) -> CallToolResult:
    return await asyncio.wait_for(session.call_tool(tool, arguments), 60)


# -- gated calls ------------------------------------------------------------------------------


async def test_an_allowed_read_passes_through_with_the_upstreams_result(served: Served) -> None:
    async with direct() as upstream:
        expected = await upstream.call_tool("read_note", {"name": "groceries"})
    async with proxied(served.url) as session:
        result = await call(session, "read_note", name="groceries")
    assert result == expected and not result.is_error
    assert text(result) == "note groceries: buy milk"
    assert await served.requests() == []  # the policy allowed it: nobody was asked


async def test_an_ask_waits_for_a_line_tap_then_runs_upstream(served: Served) -> None:
    async with proxied(served.url) as session:
        answer = asyncio.create_task(call(session, "write_note", name="chores", text="sweep"))
        request = await served.pending()
        assert not answer.done()
        await served.tap(request.id, "approve")
        result = await answer
    assert not result.is_error and text(result) == "wrote 5 characters to chores"
    assert (request.agent, request.tool) == ("claude", "mcp__notes__write_note")
    assert dict(request.arguments) == {"name": "chores", "text": "sweep"}
    assert request.session is not None and request.session.startswith("mcp-notes-")
    assert (await served.app[GATE].get_request(request.id)).status == "approved"


async def test_a_policy_deny_is_an_error_result_with_the_reason(served: Served) -> None:
    async with proxied(served.url) as session:
        result = await call(session, "delete_note", name="groceries")
    assert result.is_error
    assert text(result).startswith("tapgate: notes are kept") and "policy.rules[2]" in text(result)


async def test_an_approvers_deny_reaches_the_model_with_the_reason(served: Served) -> None:
    async with proxied(served.url) as session:
        answer = asyncio.create_task(call(session, "write_note", name="chores", text="x"))
        await served.deny((await served.pending()).id, "not on a Sunday")
        result = await answer
    assert result.is_error and text(result) == "tapgate: denied by alice: not on a Sunday"


async def test_an_expired_request_is_an_error_result(served_manual: Served) -> None:
    assert served_manual.clock is not None
    async with proxied(served_manual.url) as session:
        answer = asyncio.create_task(call(session, "write_note", name="chores", text="x"))
        request = await served_manual.pending()
        served_manual.clock.advance(601)  # past the policy's 10 minutes
        result = await answer
    assert result.is_error and text(result).startswith(f"tapgate: request {request.id} expired")


async def test_a_call_the_client_abandons_is_withdrawn(served: Served) -> None:
    async with proxied(served.url) as session:
        answer = asyncio.create_task(call(session, "write_note", name="chores", text="x"))
        request = await served.pending()
        answer.cancel()
        for _ in range(2500):
            found = await served.app[GATE].get_request(request.id)
            if found.status != "pending":
                break
            await asyncio.sleep(0.004)
    assert found.status == "cancelled"


async def test_an_unreachable_tapgate_server_is_an_error_result(closed_port: int) -> None:
    url = f"http://127.0.0.1:{closed_port}"
    async with proxied(url, "--retry-for", "0") as session:
        result = await call(session, "read_note", name="groceries")
    assert result.is_error
    assert text(result).startswith(f"tapgate: server unreachable at {url} (ConnectError")
    assert text(result).endswith("the tool was not called")


async def test_a_refused_agent_token_is_an_error_result(served: Served) -> None:
    async with proxied(served.url, token="not-the-agent-token-0123456789") as session:
        result = await call(session, "read_note", name="groceries")
    assert result.is_error and "refused the agent token" in text(result)


async def test_the_upstream_dying_mid_call_is_an_error_result_not_a_hang(served: Served) -> None:
    async with proxied(served.url) as session:
        crashed = await call(session, "crash")
        after = await call(session, "read_note", name="groceries")
    assert crashed.is_error and after.is_error
    gone = "the MCP server 'notes' is gone (its connection closed)"
    assert text(crashed) == f"tapgate: approved, but {gone}"
    assert text(after) == f"tapgate: {gone}; the tool was not called"


async def test_the_upstream_never_sees_the_agent_token(served: Served) -> None:
    async with proxied(served.url) as session:
        token = await call(session, "environment", name="TAPGATE_AGENT_TOKEN")
        url = await call(session, "environment", name="TAPGATE_URL")
    assert (text(token), text(url)) == ("unset", "set")


# -- passed through unchanged -------------------------------------------------------------------


async def _everything(session: ClientSession) -> list[Any]:
    return [
        session.server_info,
        session.instructions,
        session.server_capabilities,
        await session.list_tools(),
        await session.list_resources(),
        await session.list_resource_templates(),
        await session.read_resource("notes://index"),
        await session.read_resource("notes://chores"),
        await session.list_prompts(),
        await session.get_prompt("summarise", {"topic": "shopping"}),
    ]


async def test_tools_resources_and_prompts_pass_through_unchanged(served: Served) -> None:
    async with direct() as upstream:
        expected = await _everything(upstream)
    async with proxied(served.url) as session:
        assert await _everything(session) == expected
    tools = {tool.name for tool in expected[3].tools}
    assert {"read_note", "peek", "wipe"} <= tools  # a listing worth comparing
    assert await served.requests() == []  # listings and reads are not tool calls


# -- annotations ----------------------------------------------------------------------------------


async def test_a_trusted_read_only_annotation_is_allowed_by_its_risk(served: Served) -> None:
    async with proxied(served.url, "--trust-annotations") as session:
        result = await call(session, "peek", name="groceries")
    assert not result.is_error and text(result) == "peeked at groceries"
    assert await served.requests() == []


async def test_a_trusted_destructive_annotation_is_denied_by_its_risk(served: Served) -> None:
    async with proxied(served.url, "--trust-annotations") as session:
        result = await call(session, "wipe")
    assert result.is_error
    assert "destructive tools default to deny" in text(result)


@pytest.mark.parametrize("tool", ["peek", "wipe"])
async def test_untrusted_annotations_change_nothing(served: Served, tool: str) -> None:
    """Without --trust-annotations a tool's hints are its server's claims: the default asks."""
    async with proxied(served.url) as session:
        arguments = {"name": "x"} if tool == "peek" else {}
        answer = asyncio.create_task(call(session, tool, **arguments))
        request = await served.pending()
        assert request.tool == f"mcp__notes__{tool}"
        await served.tap(request.id, "approve")
        result = await answer
    assert not result.is_error


# -- a streamable-HTTP upstream -----------------------------------------------------------------


@contextlib.asynccontextmanager
async def http_upstream() -> AsyncIterator[str]:
    """The test upstream serving streamable HTTP on a loopback port; yields its endpoint."""
    port = free_port()
    proc = await asyncio.create_subprocess_exec(sys.executable, str(UPSTREAM), "--http", str(port))
    try:
        for _ in range(500):
            with contextlib.suppress(OSError):
                _, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.close()
                break
            await asyncio.sleep(0.02)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        await asyncio.wait_for(proc.wait(), 10)


async def test_a_streamable_http_upstream_is_gated_the_same_way(served: Served) -> None:
    async with http_upstream() as endpoint, proxied(served.url, upstream=["--url", endpoint]) as s:
        allowed = await call(s, "read_note", name="groceries")
        denied = await call(s, "delete_note", name="groceries")
    assert not allowed.is_error and text(allowed) == "note groceries: buy milk"
    assert denied.is_error and text(denied).startswith("tapgate: notes are kept")


# -- the command line ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["mcp-proxy", "--name", NAME],  # no upstream
        ["mcp-proxy", "--name", NAME, "--url", "http://127.0.0.1:9/mcp", "--", "true"],  # two
    ],
)
def test_exactly_one_upstream_is_required(
    argv: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TAPGATE_AGENT_TOKEN", TOKEN)
    assert cli(*argv) == 2
    assert "-- COMMAND [ARG ...] or --url URL" in capsys.readouterr().err


def test_no_agent_token_exits_78(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TAPGATE_AGENT_TOKEN", raising=False)
    assert cli("mcp-proxy", "--name", NAME, "--", "true") == 78
    assert "no agent token" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["my notes", "notes*", "a__b", "a_", "_a", "a___b", "_"])
def test_a_name_the_policy_could_not_match_is_refused(
    name: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``mcp__NAME__TOOL`` must split one way: ``--name a__b`` with tool ``c`` and
    ``--name a`` with tool ``b__c`` were both ``mcp__a__b__c``, as were ``a_`` with
    ``b`` and ``a`` with ``_b``: one policy rule covered two servers' tools."""
    monkeypatch.delenv("TAPGATE_AGENT_TOKEN", raising=False)  # refused before it is needed
    assert cli("mcp-proxy", f"--name={name}", "--", "true") == 2
    assert "letters, digits and -, joined by single _" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["notes", "my_notes", "my-notes", "a_b-c_1", "-"])
def test_a_name_of_words_joined_by_single_underscores_is_taken(
    name: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TAPGATE_AGENT_TOKEN", raising=False)
    assert cli("mcp-proxy", f"--name={name}", "--", "true") == 78  # past the name: no token
    assert "no agent token" in capsys.readouterr().err


def test_without_the_mcp_extra_it_says_how_to_install_it() -> None:
    """``sys.modules['mcp'] = None`` makes ``import mcp`` fail as on a machine without it."""
    code = (
        "import sys; sys.modules['mcp'] = None; from tapgate.cli import main; "
        "sys.exit(main(['mcp-proxy', '--name', 'x', '--', 'true']))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={"TAPGATE_AGENT_TOKEN": TOKEN, "PATH": ""},
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "pip install 'tapgate[mcp]'" in done.stderr


def test_an_upstream_that_cannot_start_exits_69(tmp_path: Path) -> None:
    done = subprocess.run(
        [TAPGATE, "mcp-proxy", "--name", NAME, "--", str(tmp_path / "no-such-server")],
        capture_output=True,
        text=True,
        env={"TAPGATE_AGENT_TOKEN": TOKEN, "PATH": ""},
        stdin=subprocess.DEVNULL,
        check=False,
        timeout=60,
    )
    assert done.returncode == 69, done.stderr
    assert "tapgate: MCP server 'notes':" in done.stderr


async def test_an_approvers_edit_runs_upstream_with_the_edited_arguments(served: Served) -> None:
    async with proxied(served.url) as session:
        answer = asyncio.create_task(call(session, "write_note", name="chores", text="sweep"))
        request = await served.pending()
        tap = Tap(channel="line", user_id=ALICE, action="approve", request_id=request.id)
        edited = {"name": "chores", "text": "sweep and mop"}
        assert (await approve_edit(served.app[GATE], tap, edited)).applied
        result = await answer
    assert not result.is_error and text(result) == "wrote 13 characters to chores"
