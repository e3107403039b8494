"""The terminal prompt handler on a real pseudo-terminal, deciding real requests in SQLite.

An agent process checks a call with ``Gate(handler=TerminalPrompt())``; the
test reads what it draws and types the keys an approver would.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tapgate.store import Store
from tapgate.terminal.keys import decode_keys
from tests.ptys import Terminal, Terminals, plain


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'prompt.db'}"


@pytest.fixture
def agents() -> Iterator[Terminals]:
    with Terminals() as started:
        yield started


def agent(agents: Terminals, url: str, tool: str, arguments: dict[str, Any]) -> Terminal:
    argv = ["-m", "tests.channels.console.prompt_agent", url, tool, json.dumps(arguments)]
    return agents.start(argv)


def decision_of(terminal: Terminal) -> dict[str, Any]:
    assert terminal.wait() == 0, plain(terminal.raw)
    [line] = [x for x in plain(terminal.raw).splitlines() if x.startswith("DECISION ")]
    decision: dict[str, Any] = json.loads(line.removeprefix("DECISION "))
    return decision


async def test_return_approves_a_command(url: str, agents: Terminals) -> None:
    terminal = agent(agents, url, "Bash", {"command": "git push origin main", "timeout": 30})
    screen = terminal.expect("Esc/n deny")
    assert "Approval needed: Bash" in plain(screen)
    assert "\x1b[1mgit push origin main" in screen  # the command, bold
    assert '"timeout": 30' in plain(screen)  # the other arguments as JSON
    terminal.send("\r")
    decision = decision_of(terminal)
    assert decision["verdict"] == "allow" and decision["decided_by"] == "handler:terminal"
    async with await Store.open(url) as store:
        entries = await store.audit_log(request_id=decision["request_id"])
    assert [e.event for e in entries] == ["requested", "approved"]
    assert entries[1].actor == "handler:terminal"
    assert entries[1].detail["handler"] == "terminal"


async def test_deny_with_a_typed_reason_shows_the_diff(url: str, agents: Terminals) -> None:
    edit = {"file_path": "app.py", "old_string": "DEBUG = False", "new_string": "DEBUG = True"}
    terminal = agent(agents, url, "Edit", edit)
    screen = terminal.expect("Esc/n deny")
    assert "\x1b[31m-DEBUG = False" in screen and "\x1b[32m+DEBUG = True" in screen
    terminal.send("\x1b")  # Escape: deny, then the reason
    terminal.expect("reason (Return to send")
    terminal.send("not in prod")
    terminal.expect("not in prod")
    terminal.send("\x7fd\r")  # a backspace is honoured
    decision = decision_of(terminal)
    assert decision == {
        "verdict": "deny",
        "decided_by": "handler:terminal",
        "reason": "not in prod",
        "request_id": decision["request_id"],
    }


async def test_s_allows_for_the_session(url: str, agents: Terminals) -> None:
    terminal = agent(agents, url, "deploy", {"env": "staging"})
    terminal.expect("s session")
    terminal.send("x")  # not a choice: asked again
    terminal.send("s")
    terminal.expect("approved for this session")
    decision = decision_of(terminal)
    assert decision["verdict"] == "allow"
    async with await Store.open(url) as store:
        [grant] = await store.list_grants()
    assert (grant.scope, grant.session, grant.created_by) == ("session", "s1", "handler:terminal")


def test_keys_decode_like_a_terminal_sends_them() -> None:
    keys, rest = decode_keys("\r\x1b\r\x1b\x1bj\x1b[Bk\x1bOA\x1b[1;5Cr\x1b")
    assert keys == ["enter", "alt+enter", "alt+escape", "j", "down", "k", "up", "r"]
    assert rest == "\x1b"  # Escape or the start of a sequence: held for a moment
    assert decode_keys(rest, final=True) == (["escape"], "")
