"""Telegram's config, cards and Bot API client, each against the fake Bot API where it talks."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tapgate.channels.telegram.api import BotApi, BotApiError
from tapgate.channels.telegram.cards import (
    TEXT_MAX,
    render_batch,
    render_card,
    render_resolved,
    visible_length,
)
from tapgate.channels.telegram.notifier import TelegramNotifier
from tapgate.channels.telegram.settings import TelegramConfig, parse_telegram_user
from tapgate.config import parse_config
from tapgate.delivery.batch_view import present_batch
from tapgate.delivery.presentation import present
from tapgate.errors import ConfigError, PermanentDeliveryError
from tapgate.gate.models import Delivery, Request
from tests.factories import make_request
from tests.fakes.telegram import BOT_TOKEN, FakeTelegram, _html_error

USER = "111111111"
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def _section(**fields: Any) -> dict[str, Any]:
    return {"bot_token": BOT_TOKEN, **fields}


# -- config --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "needle"),
    [
        ({"bot_token": "not-a-token"}, "@BotFather"),
        ({"mode": "webhook"}, "needs webhook_secret"),
        ({"mode": "webhook", "webhook_secret": "has space"}, "A-Z, a-z, 0-9"),
        ({"mode": "webhook", "webhook_secret": "x" * 257}, "1-256"),
        ({"mode": "websocket"}, "mode"),
    ],
)
def test_bad_telegram_sections_name_the_yaml_path(fields: dict[str, Any], needle: str) -> None:
    raw = {
        "approvers": [{"name": "alice", "telegram": USER}],
        "channels": {"console": {"enabled": False}, "telegram": _section(**fields)},
        "policy": {"rules": [{"tool": "*", "action": "ask", "approvers": ["alice"]}]},
    }
    with pytest.raises(ConfigError) as raised:
        parse_config(raw, env={})
    assert "channels.telegram" in str(raised.value)
    assert needle in str(raised.value)


def test_a_webhook_secret_of_the_allowed_alphabet_is_accepted() -> None:
    secret = "A-z_09" * 42 + "abcd"  # 256 characters
    config = TelegramConfig.model_validate(_section(mode="webhook", webhook_secret=secret))
    assert config.mode == "webhook"


@pytest.mark.parametrize("value", ["-100123", "0", "@alice", "12a", "1" * 17, ""])
def test_an_approver_id_must_be_a_positive_user_id(value: str) -> None:
    with pytest.raises(ValueError, match="/start"):
        parse_telegram_user(value)


def test_an_approver_id_is_the_number_from_start() -> None:
    assert parse_telegram_user(" 123456789 ") == "123456789"


# -- cards -------------------------------------------------------------------------------


def _request(**arguments: Any) -> Request:
    return make_request(NOW, tool="deploy", arguments=arguments or {"env": "prod"})


hostile = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=0, max_size=3000
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=hostile, name=st.text(max_size=300))
def test_hostile_arguments_are_escaped_and_fit_telegrams_limits(text: str, name: str) -> None:
    request = make_request(NOW, tool=name or "t", arguments={"command": text, "other": text[:50]})
    view = present(request)
    for card in (
        render_card(view),
        render_resolved(view, status="denied", by=name, at=datetime.now(UTC), reason=text),
    ):
        assert _html_error(card.text) is None, card.text
        assert 1 <= visible_length(card.text) <= TEXT_MAX
        for row in card.keyboard:
            assert len(row) <= 8
            assert all(1 <= len(b["callback_data"].encode()) <= 64 for b in row)


def test_a_secret_in_the_arguments_is_masked_on_the_card() -> None:
    key = "sk-" + "A1b2C3d4" * 5
    card = render_card(present(_request(command=f"curl -H 'Authorization: Bearer {key}'")))
    assert key not in card.text


def test_a_huge_argument_is_cut_visibly_to_fit_4096() -> None:
    card = render_card(present(_request(command="x" * 100 + "\n" + "y" * 50_000)))
    assert visible_length(card.text) <= TEXT_MAX
    assert "more" in card.text  # the cut says what it cut


def test_a_fifty_call_batch_is_one_card_within_the_limits() -> None:
    calls = [
        make_request(
            NOW,
            tool="write",
            batch_id="B" * 22,
            arguments={"path": f"/x/{n}", "content": "z" * 500},
        )
        for n in range(50)
    ]
    card = render_batch(present_batch(calls))
    assert visible_length(card.text) <= TEXT_MAX
    assert _html_error(card.text) is None
    buttons = [b for row in card.keyboard for b in row]
    assert len(buttons) <= 100
    assert all(len(row) <= 8 for row in card.keyboard)
    assert [b["text"] for b in card.keyboard[-1]][:2] == ["✅ Approve all", "❌ Deny all"]


# -- the Bot API client and the notifier, against the fake ---------------------------------


async def test_a_flood_wait_pauses_every_send_of_the_bot_not_only_that_chat() -> None:
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)
        await asyncio.sleep(0)

    def clock() -> float:
        """The flood gate's time: it passes only while the clients sleep."""
        return sum(slept)

    async with FakeTelegram(started={USER, "222222222"}) as fake:
        fake.flood(retry_after=3)
        notifier = TelegramNotifier(BOT_TOKEN, api_base_url=fake.url, sleep=sleep, clock=clock)
        other = BotApi(BOT_TOKEN, base_url=fake.url, sleep=sleep, clock=clock)
        try:
            request = _request()
            delivery = Delivery(approver="alice", channel="telegram", address=USER)
            receipt = await notifier.send(request, delivery, key="k1")
            assert receipt.ref["message_id"]
            assert slept and slept[0] == pytest.approx(3.0)  # retry_after, honoured
            slept.clear()
            fake.flood(retry_after=2)
            with pytest.raises(BotApiError) as raised:
                await other.call("sendMessage", {"chat_id": "222222222", "text": "x"})
            assert raised.value.retry_after == 2.0
            # another chat's send now waits for the bot's flood to pass, before it is made
            await other.call("sendMessage", {"chat_id": USER, "text": "y"})
            assert slept and slept[0] > 1.0
        finally:
            await notifier.close()
            await other.close()


async def test_a_user_who_never_started_the_bot_is_a_permanent_failure_naming_the_fix() -> None:
    async with FakeTelegram(started=set()) as fake:
        notifier = TelegramNotifier(BOT_TOKEN, api_base_url=fake.url)
        try:
            delivery = Delivery(approver="alice", channel="telegram", address=USER)
            with pytest.raises(PermanentDeliveryError) as raised:
                await notifier.send(_request(), delivery, key="k1")
        finally:
            await notifier.close()
    assert raised.value.status == 403
    assert "alice (Telegram user 111111111) has not started the bot" in str(raised.value)
    assert "press Start" in str(raised.value)
    assert len(fake.requests_to("sendMessage")) == 1


async def test_a_late_answer_is_query_too_old_which_the_client_names() -> None:
    async with FakeTelegram(started={USER}) as fake:
        api = BotApi(BOT_TOKEN, base_url=fake.url)
        try:
            with pytest.raises(BotApiError) as raised:
                await api.call("answerCallbackQuery", {"callback_query_id": "never-pressed"})
        finally:
            await api.close()
    assert raised.value.query_too_old


async def test_an_update_after_the_decision_edits_the_card_and_drops_the_buttons() -> None:
    async with FakeTelegram(started={USER}) as fake:
        notifier = TelegramNotifier(BOT_TOKEN, api_base_url=fake.url)
        try:
            request = _request()
            delivery = Delivery(approver="alice", channel="telegram", address=USER)
            receipt = await notifier.send(request, delivery, key="k1")
            decided = replace(
                request,
                status="approved",
                resolved_by="alice",
                resolved_at=NOW + timedelta(seconds=5),
            )
            await notifier.update(decided, receipt)
            await notifier.update(decided, receipt)  # "message is not modified": not an error
        finally:
            await notifier.close()
    [card] = fake.in_chat(USER)
    assert card.keyboard == []
    assert "Approved by alice" in card.shown
