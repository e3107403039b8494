"""``tapgate doctor --send-test NAME``: a real card per channel, delivered and tapped, or why not.

The command runs as the operator runs it (``main``, in a thread) beside the
real server (``build_app`` on a loopback port, the same SQLite file), whose
dispatcher delivers the cards to the fake LINE and Slack APIs; the taps are
signed webhook calls to that server, as the platforms send them.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from tapgate.cli import main
from tapgate.cli.send_test import TEST_TOOL
from tapgate.config import load_config
from tapgate.gate.models import Request
from tapgate.server.app import build_app
from tapgate.server.keys import DISPATCHER, GATE
from tests.cli import test_cli_doctor
from tests.cli.test_cli_doctor import write_config
from tests.fakes import FakeLine, FakeSlack
from tests.fakes.served import ALICE, LINE_SECRET, SLACK_SECRET, click, until
from tests.fakes.taps import signed_line_tap, slack_form, slack_headers

fakes = test_cli_doctor.fakes  # the fixture


async def send_test(config: Path, *argv: str) -> asyncio.Task[int]:
    """The command, started; its exit status once it is done."""
    args = ["doctor", "--config", str(config), "--send-test", "alice", *argv]
    return asyncio.create_task(asyncio.to_thread(main, args))


async def cards_of(app: web.Application, count: int) -> dict[str, Request]:
    """The test requests the command wrote, by channel, once there are ``count``.

    In any status: a card nobody can receive is ended by the server at once,
    sometimes before its sibling was even written. Once they are all there the
    server's dispatcher is woken, as its idle pass would wake it up to 5 s
    later (that pass is ``test_rows_another_process_wrote_are_sent_by_the_idle_pass``'s).
    """
    found: dict[str, Request] = {}
    for _ in range(400):
        written = await app[GATE].list_requests(tool=TEST_TOOL)
        found = {r.arguments["channel"]: r for r in written}
        if len(found) == count:
            app[DISPATCHER].wake()
            return found
        await asyncio.sleep(0.05)
    raise AssertionError(f"test cards never appeared: {found}")


async def post(server: TestServer, path: str, body: bytes, headers: dict[str, str]) -> None:
    url = f"http://127.0.0.1:{server.port}{path}"
    async with aiohttp.ClientSession() as http, http.post(url, data=body, headers=headers) as r:
        assert r.status == 200, await r.text()


async def serving(config: Path) -> tuple[web.Application, TestServer]:
    app = build_app(load_config(config))
    server = TestServer(app, host="127.0.0.1")  # it binds port 0 itself: no race
    await server.start_server()
    return app, server


async def test_each_channel_is_delivered_and_tapped(
    tmp_path: Path, fakes: tuple[FakeLine, FakeSlack], capsys: pytest.CaptureFixture[str]
) -> None:
    line, slack = fakes
    config = write_config(tmp_path, line, slack)
    app, server = await serving(config)
    try:
        run = await send_test(config, "--wait", "30")
        cards = await cards_of(app, 2)
        assert all(not r.grantable and r.approvers == ("alice",) for r in cards.values())
        await until(lambda: bool(line.pushed_to(ALICE[1])) and bool(slack.posts))
        # A forged "Always" on a test card is refused: it grants nothing, decides nothing.
        body, headers = signed_line_tap(LINE_SECRET, ALICE[1], cards["line"].id, "approve_always")
        await post(server, "/webhooks/line", body, headers)
        body, headers = signed_line_tap(LINE_SECRET, ALICE[1], cards["line"].id, "approve")
        await post(server, "/webhooks/line", body, headers)
        tap = slack_form(click("approve", cards["slack"].id, ALICE, slack.dm_channel(ALICE[0])))
        timestamp = str(int(time.time()))
        await post(server, "/webhooks/slack", tap, slack_headers(SLACK_SECRET, tap, timestamp))
        code = await run
        grants = await app[GATE].grants(active_only=False)
    finally:
        await server.close()
    out = capsys.readouterr().out.splitlines()
    assert code == 0, out
    assert out == [
        "✓ line: send-test to alice: delivered; tapped: approved by alice",
        "✓ slack: send-test to alice: delivered; tapped: approved by alice",
    ]
    assert grants == []
    [pushed] = line.pushed_to(ALICE[1])
    assert TEST_TOOL in str(pushed) and "Nothing runs either way" in str(pushed)


async def test_an_undelivered_and_an_untapped_card_fail_and_are_withdrawn(
    tmp_path: Path, fakes: tuple[FakeLine, FakeSlack], capsys: pytest.CaptureFixture[str]
) -> None:
    line, slack = fakes
    config = write_config(tmp_path, line, slack)
    app, server = await serving(config)
    line.revoke()  # every push is refused: 401, never retried
    try:
        run = await send_test(config, "--wait", "3")
        cards = await cards_of(app, 2)
        code = await run
        after = {c: await app[GATE].get_request(r.id) for c, r in cards.items()}
    finally:
        await server.close()
    out = capsys.readouterr().out.splitlines()
    assert code == 1
    assert out[0].startswith("✗ line: send-test to alice: not delivered: ")
    assert "401" in out[0]
    assert out[1] == "✗ slack: send-test to alice: delivered; not tapped within 3s"
    # The server ends a card nobody can receive; the command withdraws the one left pending.
    assert {c: r.status for c, r in after.items()} == {"line": "expired", "slack": "cancelled"}


async def test_without_a_server_nobody_delivers_and_it_says_so(
    tmp_path: Path, fakes: tuple[FakeLine, FakeSlack], capsys: pytest.CaptureFixture[str]
) -> None:
    line, slack = fakes
    config = write_config(tmp_path, line, slack)
    assert await asyncio.to_thread(main, ["db", "upgrade", "--config", str(config)]) == 0
    capsys.readouterr()
    code = await (await send_test(config, "--wait", "1"))
    out = capsys.readouterr().out.splitlines()
    assert code == 1
    assert out == [
        f"✗ {channel}: send-test to alice: not delivered within 1s: nobody picked the card up "
        "(is `tapgate serve` running on this store?)"
        for channel in ("line", "slack")
    ]
    assert line.requests == [] and slack.requests == []
