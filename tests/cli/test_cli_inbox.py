"""``tapgate inbox`` on a real pseudo-terminal, deciding real requests in a SQLite store.

The inbox runs as its own process (``tapgate inbox --config … --as …``);
requests are made, and decided elsewhere, by this test through a gate on the
same file, as a server and its chat taps would.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tapgate.config import load_config
from tapgate.decisions.texts import NOT_APPROVER
from tapgate.gate import Gate, ToolCall
from tapgate.gate.models import Request
from tapgate.policy import Policy
from tapgate.store import Store
from tests.cli.test_cli_ops import submit, write_config
from tests.ptys import ROOT, Terminal, Terminals


@pytest.fixture
def config(tmp_path: Path) -> Path:
    return write_config(tmp_path)


@pytest.fixture
def inboxes() -> Iterator[Terminals]:
    with Terminals() as started:
        yield started


MAIN = "from tapgate.cli import main; raise SystemExit(main())"


def inbox(inboxes: Terminals, config: Path, approver: str) -> Terminal:
    argv = ["-c", MAIN, "inbox", "--config", str(config), "--as", approver, "--interval", "0.2"]
    return inboxes.start(argv)


async def requests(config: Path) -> dict[str, Request]:
    async with await Store.open(load_config(config).store_url) as store:
        return {r.id: r for r in await store.list_requests()}


async def audit(config: Path, request_id: str) -> list[tuple[str, str, dict[str, object]]]:
    async with await Store.open(load_config(config).store_url) as store:
        entries = await store.audit_log(request_id=request_id)
    return [(e.event, e.actor, dict(e.detail)) for e in entries]


async def test_return_approves_and_escape_denies(config: Path, inboxes: Terminals) -> None:
    first = await submit(config, arguments={"env": "prod"})
    second = await submit(config, arguments={"env": "staging"})
    terminal = inbox(inboxes, config, "alice")
    terminal.expect("2 pending")
    terminal.expect('"env": "prod"')  # the selected request, drawn in full
    terminal.send("\r")
    terminal.expect("Approved - deploy")
    terminal.expect("1 pending")
    terminal.send("\x1b")
    terminal.expect("Denied - deploy")
    terminal.expect("no pending requests")
    terminal.send("q")
    assert terminal.wait() == 0
    assert terminal.raw.endswith("\x1b[?25h\x1b[?1049l")  # the screen given back
    found = await requests(config)
    assert (found[first].status, found[first].resolved_by) == ("approved", "alice")
    assert (found[second].status, found[second].resolved_by) == ("denied", "alice")
    [(event, actor, detail)] = (await audit(config, first))[1:]
    assert (event, actor, detail["via"]) == ("approved", "alice", "inbox")
    assert "break_glass" not in detail  # checked against the approvers, unlike `resolve`


async def test_r_denies_with_a_reason_after_moving(config: Path, inboxes: Terminals) -> None:
    first = await submit(config, arguments={"env": "prod"})
    second = await submit(config, arguments={"env": "staging"})
    terminal = inbox(inboxes, config, "alice")
    terminal.expect("2 pending")
    terminal.send("j")
    terminal.expect('"env": "staging"')
    terminal.send("r")
    terminal.expect("deny, reason")
    terminal.send("freeze week\r")
    terminal.expect("Denied - deploy")
    terminal.send("k")  # at the top already: stays
    terminal.send("q")
    assert terminal.wait() == 0
    found = await requests(config)
    assert found[first].status == "pending"
    assert (found[second].status, found[second].resolution_reason) == ("denied", "freeze week")


async def test_a_non_approver_is_refused_and_audited(config: Path, inboxes: Terminals) -> None:
    rid = await submit(config)  # for the oncall group: alice, not bob
    terminal = inbox(inboxes, config, "bob")
    terminal.expect("1 pending")
    terminal.send("\r")
    terminal.expect(NOT_APPROVER)
    terminal.send("q")
    assert terminal.wait() == 0
    assert (await requests(config))[rid].status == "pending"
    refused = [e for e in await audit(config, rid) if e[0] == "refused"]
    assert [(actor, detail["why"]) for _, actor, detail in refused] == [("bob", "not an approver")]


async def test_a_decision_made_elsewhere_leaves_the_list(config: Path, inboxes: Terminals) -> None:
    rid = await submit(config)
    terminal = inbox(inboxes, config, "alice")
    terminal.expect("1 pending")
    loaded = load_config(config)
    async with await Store.open(loaded.store_url) as store:
        gate = Gate(store=store, policy=Policy(loaded.policy_spec()), directory=loaded.directory())
        await gate.resolve(rid, "approve", by="alice")  # a chat tap, say
    terminal.expect("no pending requests")


async def test_alt_return_approves_the_whole_batch(config: Path, inboxes: Terminals) -> None:
    loaded = load_config(config)
    calls = [ToolCall(tool="deploy", agent="ci", arguments={"env": e}) for e in ("a", "b")]
    async with await Store.open(loaded.store_url) as store:
        gate = Gate(store=store, policy=Policy(loaded.policy_spec()), directory=loaded.directory())
        batch = await gate.submit_many(calls)
    other = await submit(config, arguments={"env": "alone"})
    terminal = inbox(inboxes, config, "alice")
    terminal.expect("3 pending")
    terminal.send("\x1b\r")  # Alt+Return on the selected call (the batch's first)
    terminal.expect("2 approved")
    terminal.expect("1 pending")
    found = await requests(config)
    assert [found[t.request_id or ""].status for t in batch.tickets] == ["approved", "approved"]
    assert found[other].status == "pending"


def test_the_inbox_needs_a_terminal(config: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", MAIN, "inbox", "--config", str(config), "--as", "alice"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert result.returncode == 2 and "needs a terminal" in result.stderr
