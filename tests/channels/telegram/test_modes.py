"""Webhook registration at start, and the long poll's conflict back-off.

Webhook mode with ``server.public_url``: tapgate calls ``setWebhook`` with
the URL, ``secret_token`` and ``allowed_updates`` (the fake records them);
a refusal is an error in the log naming the command that registers it by
hand. Polling while a webhook is set (or another process polls) is answered
409 Conflict by Telegram: the poll backs off on the gate's clock (here the
manual one: no time passes unless the test moves it) and says so once.
"""

from __future__ import annotations

import logging

import pytest

from tapgate.gate.clock import ManualClock
from tests.channels.telegram.conftest import App
from tests.channels.telegram.served import ALICE, SECRET, serving
from tests.fakes._faults import Fault
from tests.fakes.served import until
from tests.fakes.telegram import FakeTelegram

PUBLIC = "https://tapgate.example"
BAD_WEBHOOK = {
    "ok": False,
    "error_code": 400,
    "description": "Bad Request: bad webhook: Failed to resolve host: Name or service not known",
}


async def test_webhook_mode_registers_the_webhook_with_its_secret_at_start(
    db_url: str, clock: ManualClock, aiohttp_client: App
) -> None:
    async for served in serving(db_url, clock, aiohttp_client, mode="webhook", public_url=PUBLIC):
        [call] = served.telegram.requests_to("setWebhook")
        assert call.args["url"] == f"{PUBLIC}/webhooks/telegram"
        assert call.args["secret_token"] == SECRET
        assert call.args["allowed_updates"] == ["message", "callback_query"]
        assert served.telegram.webhook is not None  # Telegram now posts presses there
        request_id = await served.ask("mine")
        await served.press(ALICE, await served.card(ALICE, request_id), "✅ Approve")
        assert (await served.gate.get_request(request_id)).status == "approved"


async def test_a_refused_set_webhook_is_an_error_naming_the_command(
    db_url: str, clock: ManualClock, aiohttp_client: App, caplog: pytest.LogCaptureFixture
) -> None:
    def refuse(telegram: FakeTelegram) -> None:
        telegram.script("setWebhook", Fault.status(400, BAD_WEBHOOK))

    with caplog.at_level(logging.ERROR, logger="tapgate.channels.telegram"):
        async for served in serving(
            db_url, clock, aiohttp_client, mode="webhook", public_url=PUBLIC, before=refuse
        ):
            assert served.telegram.webhook is None
            [line] = [r for r in caplog.records if "setWebhook failed" in r.getMessage()]
            shown = line.getMessage()
            assert "Failed to resolve host" in shown and "presses will not arrive" in shown
            assert "/setWebhook" in shown and "secret_token=$TELEGRAM_WEBHOOK_SECRET" in shown
            assert SECRET not in shown  # the log names the variable, never the secret


async def test_a_409_conflict_backs_off_on_the_clock_and_is_logged_once(
    db_url: str, clock: ManualClock, aiohttp_client: App, caplog: pytest.LogCaptureFixture
) -> None:
    async for served in serving(db_url, clock, aiohttp_client):
        telegram = served.telegram
        before = len(telegram.requests_to("getUpdates"))  # the long poll under way among them

        def refused(telegram: FakeTelegram = telegram, before: int = before) -> int:
            """getUpdates calls made since the webhook was set: each one answered 409."""
            return len(telegram.requests_to("getUpdates")) - before

        def parked() -> int:
            """Refusals the poll has read and started its pause for (logged just before it)."""
            said = ("refused getUpdates", "getUpdates failed again")
            return sum(any(w in r.getMessage() for w in said) for r in caplog.records)

        telegram.webhook = {"url": "https://elsewhere.example/hook"}  # set by someone else
        with caplog.at_level(logging.DEBUG, logger="tapgate.channels.telegram"):
            # The fake records a call before the poll reads its 409: moving the clock in
            # between would start the next pause late. Each step waits for both.
            await until(lambda: refused() == 1 and parked() == 1)
            for pause, seen in ((1.0, 2), (2.0, 3), (4.0, 4)):  # 1 s, doubling: never a hot loop
                clock.advance(pause - 0.5)
                assert refused() == seen - 1  # still waiting out its pause
                clock.advance(0.5)
                await until(lambda s=seen: refused() == s and parked() == s)  # type: ignore[misc]
            notes = [r for r in caplog.records if "refused getUpdates" in r.getMessage()]
            assert len(notes) == 1 and notes[0].levelno == logging.ERROR
            assert "deleteWebhook" in notes[0].getMessage()
            telegram.webhook = None  # the operator deleted it
            clock.advance(8.0)
            await until(lambda: "works again" in caplog.text)
        request_id = await served.ask("mine")
        await served.press(ALICE, await served.card(ALICE, request_id), "✅ Approve")
        assert (await served.gate.get_request(request_id)).status == "approved"
