"""Telegram as a tapgate channel: the contract's methods over the Bot API.

Cards go to each approver's private chat with the bot (:mod:`.notifier`);
presses arrive by long poll (``mode: polling``, the default: no public URL)
or at ``POST /webhooks/telegram`` (``mode: webhook``), either way stored
before they are acknowledged (:mod:`.receiver`). Nothing heavy loads at
import: the registry imports this module for every config that is read.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import cast

from pydantic import BaseModel

from tapgate.channels.contract import (
    AddressField,
    ChannelDefaults,
    ChannelHost,
    CheckResult,
    ConversationBook,
    DeliveryHost,
    Receiver,
    Route,
)
from tapgate.channels.telegram.settings import TelegramConfig, parse_telegram_user
from tapgate.delivery.notifier import Notifier

__all__ = ["WEBHOOK_PATH", "TelegramChannel"]

_log = logging.getLogger("tapgate.channels.telegram")

WEBHOOK_PATH = "/webhooks/telegram"


class TelegramChannel(ChannelDefaults):
    """The Telegram Bot API: a private chat per approver, presses by poll or webhook."""

    name = "telegram"
    settings_model: type[BaseModel] = TelegramConfig
    address = AddressField(parse=parse_telegram_user)

    def notifier(self, settings: BaseModel, host: DeliveryHost) -> Notifier:
        from tapgate.channels.telegram.notifier import TelegramNotifier

        telegram = cast(TelegramConfig, settings)
        return TelegramNotifier(
            telegram.bot_token.get_secret_value(),
            api_base_url=telegram.api_base_url,
            timeout=telegram.timeout,
            tool_shell_args=host.tool_shell_args,
            offers=host.offers,
        )

    def pace(self, settings: BaseModel) -> float | None:
        return cast(TelegramConfig, settings).pace

    def routes(self, settings: BaseModel) -> Sequence[Route]:
        if cast(TelegramConfig, settings).mode != "webhook":
            return ()  # polling: no public URL, no route
        return (Route(method="POST", path=WEBHOOK_PATH, name="webhook"),)

    async def start(self, settings: BaseModel, host: ChannelHost) -> Receiver | None:
        from tapgate.channels.telegram.api import BotApi
        from tapgate.channels.telegram.receiver import TelegramReceiver
        from tapgate.channels.telegram.webhook_setup import register_webhook

        telegram = cast(TelegramConfig, settings)
        token = telegram.bot_token.get_secret_value()
        api = BotApi(token, base_url=telegram.api_base_url, timeout=telegram.timeout)
        secret = telegram.webhook_secret
        receiver = TelegramReceiver(
            gate=host.gate,
            api=api,
            bot=token.split(":", 1)[0],
            inbox=host.inbox,
            secret=None if secret is None else secret.get_secret_value(),
            reason_window=telegram.reason_window,
            poll_timeout=telegram.poll_timeout,
            tap_log=host.tap_log,
            links=host.links,
            on_reject=host.on_reject,
            on_decision=host.on_decision,
            sleep=host.gate.clock.sleep,  # the poll's back-off runs on the gate's clock
        )
        if telegram.mode == "polling":
            receiver.start_polling()
        else:
            await register_webhook(api, telegram, host.public_url)
        return receiver

    async def check(
        self,
        settings: BaseModel,
        addresses: Mapping[str, str],
        conversations: ConversationBook | None = None,
    ) -> list[CheckResult]:
        del conversations  # nothing here depends on a stored conversation
        from tapgate.channels.telegram.check import check_telegram

        return await check_telegram(cast(TelegramConfig, settings), addresses)
