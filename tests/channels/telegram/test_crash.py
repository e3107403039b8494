"""A Telegram press is never lost to a crash, with real ``tapgate serve`` processes.

As for LINE and Slack (``tests/e2e/test_inbox_crash.py``): the test-only
apply delay opens the gap between the 200 and the decision; the server is
SIGKILLed in it, another starts on the same SQLite file, and the waiting
agent gets the decision: one in the audit, the inbox empty, the press's card
redrawn once.
"""

from __future__ import annotations

from pathlib import Path

import aiohttp

from tests.e2e.test_inbox_crash import (
    DELAY,
    decisions_in_audit,
    inbox_rows,
    long_poll,
    stop_all,
)
from tests.e2e.test_replica_failures import status_of, until
from tests.fakes import FakeLine
from tests.fakes.telegram import BOT_TOKEN, FakeTelegram, webhook_headers
from tests.replicas import LINE_TOKEN, ask, start_replica

ALICE = "111111111"
SECRET = "crash-test-secret_01"


async def test_a_telegram_press_killed_between_ack_and_apply_is_applied_once_on_restart(
    tmp_path: Path,
) -> None:
    db_url = f"sqlite:///{tmp_path / 'tapgate.db'}"
    async with (
        FakeLine(access_token=LINE_TOKEN) as line,
        FakeTelegram(started={ALICE}) as telegram,
        aiohttp.ClientSession() as session,
    ):
        telegram.webhook = {"url": "https://example.invalid/webhooks/telegram"}  # posted by us
        channels = (
            f"telegram: {{bot_token: '{BOT_TOKEN}', mode: webhook, webhook_secret: {SECRET}, "
            f"api_base_url: '{telegram.url}'}}"
        )
        approver = f"telegram: '{ALICE}'"
        a = await start_replica(
            tmp_path, "a", db_url, line.url, env=DELAY, channels=channels, approver=approver
        )
        replicas = [a]
        try:
            rid = await ask(session, a.url, 1)
            await until(lambda: bool(telegram.in_chat(ALICE)), 10, "the Telegram card")
            [card] = telegram.in_chat(ALICE)
            update = await telegram.press(ALICE, card, card.data("✅ Approve"))
            url = a.url + "/webhooks/telegram"
            async with session.post(url, json=update, headers=webhook_headers(SECRET)) as r:
                assert r.status == 200
            assert (await status_of(session, a, rid))["status"] == "pending"
            assert await inbox_rows(db_url) == 1  # acknowledged, stored, not yet applied
            await a.kill()

            b = await start_replica(
                tmp_path, "b", db_url, line.url, channels=channels, approver=approver
            )
            replicas.append(b)
            decided = await long_poll(session, b, rid)
            assert (decided["status"], decided["decided_by"]) == ("approved", "alice")
            assert await decisions_in_audit(db_url, rid) == ["approved"]
            assert await inbox_rows(db_url) == 0
            await until(lambda: not card.keyboard, 10, "the card redrawn")
            assert "Approved by alice" in card.shown
        finally:
            await stop_all(*replicas)
