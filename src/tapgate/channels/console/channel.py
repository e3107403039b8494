"""The console as a tapgate channel: requests printed on the server's terminal.

It reaches every approver by name (there is no id to configure), is on by
default when no other channel is configured (so a first run shows requests
somewhere), and decides nothing itself: its messages print the ``tapgate
resolve`` commands that do.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

from pydantic import BaseModel

from tapgate.channels.console.notifier import ConsoleNotifier
from tapgate.channels.console.settings import ConsoleConfig
from tapgate.channels.contract import (
    ChannelDefaults,
    ChannelHost,
    CheckResult,
    ConversationBook,
    DeliveryHost,
    Receiver,
)
from tapgate.delivery.notifier import Notifier

__all__ = ["ConsoleChannel"]


class ConsoleChannel(ChannelDefaults):
    """Standard output: for trying tapgate without a chat app."""

    name = "console"
    settings_model: type[BaseModel] = ConsoleConfig
    address = None
    on_without_others = True

    def enabled(self, settings: BaseModel) -> bool:
        return cast(ConsoleConfig, settings).enabled

    def notifier(self, settings: BaseModel, host: DeliveryHost) -> Notifier:
        del settings
        return ConsoleNotifier(
            tool_shell_args=host.tool_shell_args, config_path=host.config_path, offers=host.offers
        )

    async def start(self, settings: BaseModel, host: ChannelHost) -> Receiver | None:
        del settings, host
        return None

    async def check(
        self,
        settings: BaseModel,
        addresses: Mapping[str, str],
        conversations: ConversationBook | None = None,
    ) -> list[CheckResult]:
        del settings, addresses, conversations
        return [CheckResult(channel="console", what="standard output", ok=True)]
