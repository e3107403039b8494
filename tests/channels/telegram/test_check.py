"""Telegram's live check (what ``tapgate doctor`` runs) against the fake Bot API.

``TelegramChannel.check`` is called as doctor calls it: the validated
section and each approver's user id. A bad token, an API nobody answers
on, one that never answers, and an approver who never pressed Start are
each a failed line that names the fix, never a crash or a hang. Then
``tapgate doctor`` itself runs (``main``) on a config with Telegram alone.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tapgate.channels.contract import CheckResult
from tapgate.channels.telegram import channel
from tapgate.channels.telegram.settings import TelegramConfig
from tests.cli.test_cli_doctor import doctor
from tests.fakes.served import channels
from tests.fakes.telegram import BOT_TOKEN, FakeTelegram

ALICE, BOB = "111111111", "222222222"
APPROVERS = {"alice": ALICE, "bob": BOB}
SECRET = "tg-webhook-secret_0123456789"


@pytest.fixture
async def telegram() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram(started={ALICE, BOB}) as fake:
        yield fake


def section(url: str, **extra: Any) -> TelegramConfig:
    return TelegramConfig.model_validate({"bot_token": BOT_TOKEN, "api_base_url": url, **extra})


async def check(
    settings: TelegramConfig, addresses: dict[str, str] = APPROVERS
) -> list[CheckResult]:
    """The channel's check, as doctor runs it, bounded: a hang fails the test, not the suite."""
    async with asyncio.timeout(10):
        return list(await channel.check(settings, addresses))


async def test_a_working_bot_and_approvers_who_started_it_all_pass(telegram: FakeTelegram) -> None:
    results = await check(section(telegram.url))
    assert [(r.what, r.ok, r.detail) for r in results] == [
        ("bot token", True, "@tapgate_test_bot"),
        (f"approver alice ({ALICE})", True, ""),
        (f"approver bob ({BOB})", True, ""),
    ]
    assert [r.approver for r in results] == [None, "alice", "bob"]  # what doctor counts
    assert {r.channel for r in results} == {"telegram"}
    assert [r.args["chat_id"] for r in telegram.requests_to("getChat")] == [ALICE, BOB]


async def test_a_bad_token_fails_the_token_line_naming_botfather_and_asks_nothing_more(
    telegram: FakeTelegram,
) -> None:
    telegram.token = "987654321:AAHanotherBotsTokenNotThisOne0123456"  # the fake's 401
    [result] = await check(section(telegram.url))
    assert not result.ok
    assert result.what == "bot token"
    assert result.detail == (
        "getMe failed: HTTP 401: Unauthorized (check bot_token; @BotFather /token shows it)"
    )
    assert telegram.requests_to("getChat") == []
    assert BOT_TOKEN.split(":")[1] not in result.detail  # the token never reaches the output


async def test_an_api_nobody_answers_on_is_reported_with_its_address_not_as_a_token_problem(
    closed_port: int,
) -> None:
    url = f"http://127.0.0.1:{closed_port}"  # connection refused
    [result] = await check(section(url))
    assert not result.ok
    assert result.what == "bot token"
    assert url in result.detail
    assert "ClientConnectorError" in result.detail
    assert "check api_base_url" in result.detail
    assert "BotFather" not in result.detail  # the token may be fine: not the fix to name


async def test_an_api_that_never_answers_fails_within_the_configured_timeout() -> None:
    held: list[asyncio.StreamWriter] = []

    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)  # accepts the connection, reads nothing, answers never

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        [result] = await check(section(f"http://127.0.0.1:{port}", timeout=0.2))
    finally:
        for writer in held:
            writer.close()
        server.close()
        await server.wait_closed()
    assert not result.ok
    assert "TimeoutError" in result.detail
    assert "check api_base_url" in result.detail


async def test_an_approver_who_never_started_the_bot_fails_their_line_with_the_fix(
    telegram: FakeTelegram,
) -> None:
    telegram.started.discard(BOB)
    token, alice, bob = await check(section(telegram.url))
    assert token.ok and alice.ok
    assert not bob.ok
    assert bob.approver == "bob"
    assert bob.detail.startswith("HTTP 400: Bad Request: chat not found (")
    assert "bob must open a chat with the bot and press Start" in bob.detail


async def test_webhook_mode_checks_that_telegram_has_the_url(telegram: FakeTelegram) -> None:
    settings = section(telegram.url, mode="webhook", webhook_secret=SECRET)
    _, unset, *_ = await check(settings, {})
    assert unset.what == "webhook" and not unset.ok
    assert (
        unset.detail == "no webhook is set (set server.public_url so tapgate registers it at start)"
    )
    telegram.webhook = {"url": "https://gate.example.com/webhooks/telegram"}
    _, hooked = await check(settings, {})
    assert hooked.ok
    assert hooked.detail == "https://gate.example.com/webhooks/telegram"
    telegram.webhook_error = "Wrong response from the webhook: 502 Bad Gateway"
    _, failing = await check(settings, {})
    assert not failing.ok
    assert failing.detail == (
        "https://gate.example.com/webhooks/telegram; "
        "Telegram's last error: Wrong response from the webhook: 502 Bad Gateway"
    )


# -- tapgate doctor, end to end ------------------------------------------------------------


def write_config(tmp_path: Path, telegram: FakeTelegram) -> Path:
    """alice and bob approve on Telegram alone; both are asked by the policy."""
    config = {
        "store": {"url": f"sqlite:///{tmp_path / 'tapgate.db'}"},
        "approvers": [{"name": "alice", "telegram": ALICE}, {"name": "bob", "telegram": BOB}],
        "channels": {
            **channels(),
            "telegram": {"bot_token": BOT_TOKEN, "api_base_url": telegram.url, "timeout": 5},
        },
        "policy": {"rules": [{"tool": "deploy", "action": "ask", "approvers": ["alice", "bob"]}]},
    }
    path = tmp_path / "tapgate.yaml"
    path.write_text(json.dumps(config))  # JSON is YAML
    return path


async def test_doctor_passes_against_a_working_bot(
    tmp_path: Path, telegram: FakeTelegram, capsys: pytest.CaptureFixture[str]
) -> None:
    code, lines, err = await doctor(capsys, write_config(tmp_path, telegram))
    assert code == 0, (lines, err)
    assert lines == [
        "✓ telegram: bot token: @tapgate_test_bot",
        f"✓ telegram: approver alice ({ALICE})",
        f"✓ telegram: approver bob ({BOB})",
        "✓ approver alice reachable: on telegram",
        "✓ approver bob reachable: on telegram",
    ]


async def test_doctor_fails_only_the_approver_who_never_started_the_bot(
    tmp_path: Path, telegram: FakeTelegram, capsys: pytest.CaptureFixture[str]
) -> None:
    telegram.started.discard(BOB)
    code, lines, err = await doctor(capsys, write_config(tmp_path, telegram))
    assert code == 1
    assert lines[0] == "✓ telegram: bot token: @tapgate_test_bot"
    assert lines[1] == f"✓ telegram: approver alice ({ALICE})"
    assert lines[2].startswith(f"✗ telegram: approver bob ({BOB}): HTTP 400: Bad Request: chat")
    assert "press Start" in lines[2]
    assert lines[3:] == [
        "✓ approver alice reachable: on telegram",  # bob's failure is not alice's
        "✗ approver bob reachable: no channel reaches them (tried: telegram)",
    ]
    assert "2 of 5 checks failed" in err  # bob's line, and his reach


async def test_doctor_with_a_revoked_token_fails_every_approver(
    tmp_path: Path, telegram: FakeTelegram, capsys: pytest.CaptureFixture[str]
) -> None:
    telegram.token = "987654321:AAHanotherBotsTokenNotThisOne0123456"
    code, lines, _ = await doctor(capsys, write_config(tmp_path, telegram))
    assert code == 1
    assert lines == [
        "✗ telegram: bot token: getMe failed: HTTP 401: Unauthorized "
        "(check bot_token; @BotFather /token shows it)",
        "✗ approver alice reachable: no channel reaches them (tried: telegram)",
        "✗ approver bob reachable: no channel reaches them (tried: telegram)",
    ]
