"""The agent-side commands ride out a server restart: the hook, ``tapgate run``, the MCP proxy.

Each runs as users run it (the installed ``tapgate`` script as a subprocess;
the MCP proxy behind the SDK's own ``ClientSession``), against a real
``tapgate serve`` (tests/client/restarts.py) that is stopped with SIGTERM
while the command waits for a human, kept down longer than the quick
retries last, and started again on the same port and SQLite file. The
command re-attaches to its request by id and the LINE tap on the new process
approves it. A server that stays down past ``--retry-for`` gets each
command's documented error answer: the hook's ``--on-error`` verdict, exit
status 69, an ``isError`` tool result.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from mcp.client.session import ClientSession
from mcp.types import CallToolResult

from tests.client.restarts import (
    Restartable,
    assert_reattached,
    restartable,
    ride_out,
    within,
)
from tests.client.test_hook_claude_code import hook_input, subprocess_hook, verdict
from tests.client.test_mcp_proxy import call, proxied, text
from tests.client.test_run import run_process
from tests.replicas import TOKEN

DOWN = 4.0
"""Seconds the server stays down: longer than the quick retries (at most 3.5 s) last."""

EXIT_UNAVAILABLE = 69


async def hook(url: str, *flags: str) -> dict[str, Any]:
    """``tapgate hook claude-code`` on a PreToolUse of ``deploy``: its JSON answer."""
    payload = json.dumps(hook_input("PreToolUse", "deploy", {"env": "prod"}))
    code, answer = await subprocess_hook(url, payload, *flags, token=TOKEN)
    assert code == 0
    return answer


async def run(url: str, marker: Path, *flags: str) -> tuple[int, str]:
    """``tapgate run --tool deploy FLAGS -- <marking command>``: its exit status and stderr."""
    proc = await run_process(url, marker, *flags, token=TOKEN)
    _, err = await within(120, proc.communicate())
    assert proc.returncode is not None
    return proc.returncode, err.decode()


async def test_the_hook_keeps_waiting_through_a_restart(tmp_path: Path) -> None:
    async with restartable(tmp_path) as server:
        answer = asyncio.ensure_future(hook(server.url, "--retry-for", "60"))
        request_id = await within(60, ride_out(server, answer, DOWN))
        decision, reason = verdict(await within(120, answer), "PreToolUse")
        await assert_reattached(server, request_id)
    assert decision == "allow" and "approved by alice" in reason, reason


async def test_tapgate_run_keeps_waiting_through_a_restart(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    async with restartable(tmp_path) as server:
        done = asyncio.ensure_future(run(server.url, marker, "--retry-for", "60"))
        request_id = await within(60, ride_out(server, done, DOWN))
        assert not marker.exists()  # nothing ran before the tap
        code, err = await within(120, done)
        await assert_reattached(server, request_id)
    assert code == 0 and marker.read_text() == "ran", err
    assert "tapgate: approved by alice" in err and "Traceback" not in err


async def test_the_mcp_proxy_keeps_waiting_through_a_restart(tmp_path: Path) -> None:
    async with restartable(tmp_path) as server:
        async with proxied(server.url, "--retry-for", "60", token=TOKEN) as session:
            result = asyncio.ensure_future(_write(session))
            request_id = await within(60, ride_out(server, result, DOWN))
            answered = await within(120, result)
        await assert_reattached(server, request_id)
    assert not answered.is_error and text(answered) == "wrote 5 characters to chores"


async def test_past_retry_for_each_command_gives_its_error_answer(tmp_path: Path) -> None:
    """All three wait on one server that goes and never comes back."""
    marker = tmp_path / "ran"
    async with (
        restartable(tmp_path) as server,
        proxied(server.url, "--retry-for", "2", token=TOKEN) as session,
    ):
        answers = asyncio.gather(
            hook(server.url, "--retry-for", "2", "--on-error", "ask"),
            run(server.url, marker, "--retry-for", "2"),
            _write(session),
        )
        await _gone_under(server)
        (hooked, (code, err), result) = await within(120, answers)
    decision, reason = verdict(hooked, "PreToolUse")
    assert decision == "ask" and "(--on-error ask)" in reason, reason
    assert f"server unreachable at {server.url} (ConnectError" in reason
    assert code == EXIT_UNAVAILABLE and not marker.exists(), err
    assert f"tapgate: server unreachable at {server.url} (ConnectError" in err
    assert result.is_error and text(result).endswith("the tool was not called")
    assert text(result).startswith(f"tapgate: server unreachable at {server.url}")


async def _write(session: ClientSession) -> CallToolResult:
    return await call(session, "write_note", name="chores", text="sweep")


async def _gone_under(server: Restartable) -> None:
    """SIGTERM once all three wait; the server never comes back."""
    await server.pending_ids(3)
    await asyncio.sleep(0.3)
    await server.stop()
