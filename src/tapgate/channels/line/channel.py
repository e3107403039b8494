"""LINE as a tapgate channel: the contract's methods over LINE's notifier and webhook.

Cards are pushed as Flex messages (:mod:`.notifier`); taps arrive at
``POST /webhooks/line``, verified on the raw bytes (:mod:`.signature`) and
recorded before the 200 (:mod:`.webhook`). line-bot-sdk loads when the
notifier is built, never at import: the registry imports this module for
every config that is read.
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
from tapgate.channels.line.settings import LineConfig, parse_line_user
from tapgate.delivery.notifier import Notifier

__all__ = ["LineChannel"]

_log = logging.getLogger("tapgate.channels.line")


class LineChannel(ChannelDefaults):
    """The LINE Messaging API: push to each approver's 1:1 chat with the bot."""

    name = "line"
    settings_model: type[BaseModel] = LineConfig
    address = AddressField(parse=parse_line_user)

    def notifier(self, settings: BaseModel, host: DeliveryHost) -> Notifier:
        from tapgate.channels.line.notifier import LineNotifier  # the SDK loads only when used

        line = cast(LineConfig, settings)
        return LineNotifier(
            line.channel_access_token.get_secret_value(),
            api_base_url=line.api_base_url,
            timeout=line.timeout,
            tool_shell_args=host.tool_shell_args,
            offers=host.offers,
            inbox_button=host.inbox_button,
        )

    def routes(self, settings: BaseModel) -> Sequence[Route]:
        del settings
        return (Route(method="POST", path="/webhooks/line", name="webhook"),)

    async def start(self, settings: BaseModel, host: ChannelHost) -> Receiver | None:
        from tapgate.channels.line.webhook import LineWebhook

        line = cast(LineConfig, settings)
        return LineWebhook(
            gate=host.gate,
            channel_secret=line.channel_secret.get_secret_value(),
            access_token=line.channel_access_token.get_secret_value(),
            api_base_url=line.api_base_url,
            timeout=line.timeout,
            on_reject=host.on_reject,
            on_decision=host.on_decision,
            inbox=host.inbox,
            links=host.links,
            reason_window=line.reason_window,
            tap_log=host.tap_log,
        )

    async def check(
        self,
        settings: BaseModel,
        addresses: Mapping[str, str],
        conversations: ConversationBook | None = None,
    ) -> list[CheckResult]:
        del conversations  # nothing here depends on a stored conversation
        from tapgate.channels.line.check import check_line

        return await check_line(cast(LineConfig, settings), addresses)
