"""``tapgate doctor``: each channel's live check, each approver's reach, ``public_url``.

The command runs as the operator runs it (``main``), against the fake LINE
and Slack APIs (real local servers that answer as the platforms do: a
revoked token, a user who never added the bot, a missing scope) and, for
``public_url``, the real app on a loopback port.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestServer

from tapgate.cli import main
from tapgate.config import load_config
from tapgate.server.app import build_app
from tests.fakes import FakeLine, FakeSlack
from tests.fakes.served import ALICE, BOB, CAROL, TEAM, channels
from tests.fakes.taps import ReservedPort


@pytest.fixture
async def fakes() -> AsyncIterator[tuple[FakeLine, FakeSlack]]:
    async with FakeLine() as line, FakeSlack() as slack:
        yield line, slack


def write_config(
    tmp_path: Path, line: FakeLine, slack: FakeSlack, *, public_url: str | None = None
) -> Path:
    """alice and bob on both chats are asked (oncall, the default); carol, on LINE only, never."""
    server: dict[str, Any] = {"public_url": public_url} if public_url else {}
    config = {
        "server": server,
        "store": {"url": f"sqlite:///{tmp_path / 'tapgate.db'}"},
        "approvers": [
            {"name": "alice", "slack": ALICE[0], "slack_team": TEAM, "line": ALICE[1]},
            {
                "name": "bob",
                "slack": BOB[0],
                "slack_team": TEAM,
                "line": BOB[1],
                "groups": ["oncall"],
            },
            {"name": "carol", "line": CAROL[1]},
        ],
        "channels": channels(slack_url=slack.url, line_url=line.url),
        "policy": {
            "default_approvers": ["alice"],
            "rules": [{"tool": "deploy", "action": "ask", "approvers": ["oncall"]}],
        },
    }
    path = tmp_path / "tapgate.yaml"
    path.write_text(json.dumps(config))  # JSON is YAML
    return path


async def doctor(capsys: pytest.CaptureFixture[str], config: Path) -> tuple[int, list[str], str]:
    code = await asyncio.to_thread(main, ["doctor", "--config", str(config)])
    out, err = capsys.readouterr()
    return code, out.splitlines(), err


async def test_every_check_passes_against_working_platforms(
    tmp_path: Path, fakes: tuple[FakeLine, FakeSlack], capsys: pytest.CaptureFixture[str]
) -> None:
    line, slack = fakes
    reserved = ReservedPort()
    config = write_config(tmp_path, line, slack, public_url=f"http://127.0.0.1:{reserved.port}")
    server = TestServer(
        build_app(load_config(config)),
        host="127.0.0.1",
        port=reserved.port,
        socket_factory=reserved.socket_factory,
    )
    await server.start_server()
    try:
        code, lines, err = await doctor(capsys, config)
    finally:
        await server.close()
    assert code == 0, (lines, err)
    assert lines == [
        "✓ line: channel access token",
        f"✓ line: approver alice ({ALICE[1]})",
        f"✓ line: approver bob ({BOB[1]})",
        f"✓ line: approver carol ({CAROL[1]})",
        "✓ slack: bot token (Tapgate Fake)",
        "✓ slack: scopes",
        f"✓ slack: approver alice ({ALICE[0]})",
        f"✓ slack: approver bob ({BOB[0]})",
        "✓ approver alice reachable: on line, slack",
        "✓ approver bob reachable: on line, slack",  # carol is asked by nothing: no line
        f"✓ public_url http://127.0.0.1:{reserved.port}",
    ]
    [info] = line.requests_to("bot_info")
    assert info.headers["authorization"] == f"Bearer {line.access_token}"
    assert {r.path for r in line.requests_to("profile")} == {
        f"/v2/bot/profile/{u[1]}" for u in (ALICE, BOB, CAROL)
    }
    # Without users:read (the manifest grants none) each DM is opened, as delivery does.
    assert [r.args["users"] for r in slack.requests_to("conversations.open")] == [ALICE[0], BOB[0]]
    assert slack.requests_to("users.info") == []


async def test_a_revoked_token_fails_its_channel_and_leaves_approvers_unreached(
    tmp_path: Path, fakes: tuple[FakeLine, FakeSlack], capsys: pytest.CaptureFixture[str]
) -> None:
    line, slack = fakes
    line.revoke()
    slack.revoke()
    code, lines, _ = await doctor(capsys, write_config(tmp_path, line, slack))
    assert code == 1
    assert lines[0].startswith("✗ line: channel access token: GET /v2/bot/info answered 401: ")
    assert "Authentication failed" in lines[0] and "reissue the token" in lines[0]
    assert lines[1] == (
        "✗ slack: bot token: auth.test: token_revoked (reinstall the app and copy its xoxb- token)"
    )
    assert lines[2:] == [
        "✗ approver alice reachable: no channel reaches them (tried: line, slack)",
        "✗ approver bob reachable: no channel reaches them (tried: line, slack)",
    ]
    assert line.requests_to("profile") == []  # nothing more is asked with a dead token


async def test_an_unknown_approver_id_fails_on_that_channel_only(
    tmp_path: Path, fakes: tuple[FakeLine, FakeSlack], capsys: pytest.CaptureFixture[str]
) -> None:
    line, slack = fakes
    line.friends = {ALICE[1], CAROL[1]}  # bob never added the bot
    slack.members = {ALICE[0]}  # bob's member id is not in the workspace
    code, lines, _ = await doctor(capsys, write_config(tmp_path, line, slack))
    assert code == 1
    assert f'✗ line: approver bob ({BOB[1]}): 404: {{"message": "Not found"}}' in lines[2]
    assert "add the bot as a friend" in lines[2]
    assert lines[7] == (
        f"✗ slack: approver bob ({BOB[0]}): conversations.open: user_not_found "
        "(check the member id and team)"
    )
    assert lines[-2:] == [
        "✓ approver alice reachable: on line, slack",
        "✗ approver bob reachable: no channel reaches them (tried: line, slack)",
    ]


async def test_bob_reached_on_one_channel_is_reachable(
    tmp_path: Path, fakes: tuple[FakeLine, FakeSlack], capsys: pytest.CaptureFixture[str]
) -> None:
    line, slack = fakes
    slack.deactivated = {BOB[0]}
    code, lines, _ = await doctor(capsys, write_config(tmp_path, line, slack))
    assert code == 1  # the Slack line for bob still fails
    assert f"✗ slack: approver bob ({BOB[0]}): conversations.open: user_disabled" in lines[7]
    assert lines[-1] == "✓ approver bob reachable: on line"


async def test_missing_scopes_are_named_and_users_info_is_used_where_granted(
    tmp_path: Path, fakes: tuple[FakeLine, FakeSlack], capsys: pytest.CaptureFixture[str]
) -> None:
    line, slack = fakes
    slack.scopes = ("chat:write", "users:read")
    slack.deactivated = {BOB[0]}
    code, lines, _ = await doctor(capsys, write_config(tmp_path, line, slack))
    assert code == 1
    assert (
        lines[5]
        == "✗ slack: scopes: missing im:write, im:history, commands (add them and reinstall)"
    )
    assert lines[6] == f"✓ slack: approver alice ({ALICE[0]})"
    assert lines[7] == f"✗ slack: approver bob ({BOB[0]}): users.info: the account is deactivated"
    assert [r.args["user"] for r in slack.requests_to("users.info")] == [ALICE[0], BOB[0]]


async def test_a_public_url_that_does_not_answer_fails(
    tmp_path: Path,
    fakes: tuple[FakeLine, FakeSlack],
    capsys: pytest.CaptureFixture[str],
    closed_port: int,
) -> None:
    line, slack = fakes
    nobody = f"http://127.0.0.1:{closed_port}"
    code, lines, _ = await doctor(capsys, write_config(tmp_path, line, slack, public_url=nobody))
    assert code == 1
    assert lines[-1].startswith(f"✗ public_url {nobody}: GET /healthz: ")


async def test_an_answer_that_is_not_tapgates_fails(
    tmp_path: Path, fakes: tuple[FakeLine, FakeSlack], capsys: pytest.CaptureFixture[str]
) -> None:
    line, slack = fakes
    somebody = line.url.rstrip("/")  # answers 404 on /healthz: some other server
    code, lines, _ = await doctor(capsys, write_config(tmp_path, line, slack, public_url=somebody))
    assert code == 1
    assert lines[-1] == (
        f"✗ public_url {somebody}: GET /healthz answered 404 (is this URL tapgate's?)"
    )
