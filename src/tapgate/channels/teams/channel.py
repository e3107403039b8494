"""Microsoft Teams as a tapgate channel: the contract's methods over the notifier and webhook.

Cards are Adaptive Cards posted through the Bot Connector (:mod:`.notifier`);
presses arrive at ``POST /webhooks/teams`` with the Bot Connector's bearer
token, checked in full before the body is read (:mod:`.auth`), and are
recorded before they are answered (:mod:`.webhook`). Nothing heavy loads at
import: the registry imports this module for every config that is read.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, cast

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
from tapgate.channels.teams.settings import TeamsConfig, parse_teams_user
from tapgate.delivery.notifier import Notifier

__all__ = ["TeamsChannel"]

_log = logging.getLogger("tapgate.channels.teams")

PACE = 0.5
"""Seconds between two messages to one chat: Teams allows 7 per second, 8 per 2 s and
60 per 30 s per bot per conversation; 2 per second stays under all three."""


class TeamsChannel(ChannelDefaults):
    """A single-tenant Azure Bot: a card per approver in their personal chat with the app."""

    name = "teams"
    settings_model: type[BaseModel] = TeamsConfig
    address = AddressField(parse=parse_teams_user)

    def notifier(self, settings: BaseModel, host: DeliveryHost) -> Notifier:
        from tapgate.channels.teams.notifier import TeamsNotifier

        teams = cast(TeamsConfig, settings)
        return TeamsNotifier(
            app_id=teams.app_id,
            app_password=teams.app_password.get_secret_value(),
            token_url=teams.token_endpoint,
            conversations=host.conversations,
            timeout=teams.timeout,
            tool_shell_args=host.tool_shell_args,
            offers=host.offers,
            public_url=host.public_url if host.inbox_button else None,
        )

    def pace(self, settings: BaseModel) -> float | None:
        del settings
        return PACE

    def routes(self, settings: BaseModel) -> Sequence[Route]:
        del settings
        return (Route(method="POST", path="/webhooks/teams", name="webhook"),)

    async def start(self, settings: BaseModel, host: ChannelHost) -> Receiver | None:
        from tapgate.channels.teams.check import missing_conversations
        from tapgate.channels.teams.webhook import TeamsWebhook

        teams = cast(TeamsConfig, settings)
        webhook = TeamsWebhook(
            gate=host.gate,
            settings=teams,
            inbox=host.inbox,
            on_reject=host.on_reject,
            on_decision=host.on_decision,
            tap_log=host.tap_log,
            conversations=host.conversations,
            links=host.links,
            public_url=host.public_url,
        )
        directory = host.gate.directory
        addresses = {
            name: address
            for name in directory.names
            if (address := _address(directory.get(name), self.name)) is not None
        }
        missing: list[str] = []
        if host.conversations is not None:
            missing = await missing_conversations(host.conversations, addresses)
        for name in missing:
            _log.warning(
                "Teams approver %s cannot be reached yet: they must install the tapgate app "
                "in Teams (or message the bot) once",
                name,
            )
        return webhook

    async def check(
        self,
        settings: BaseModel,
        addresses: Mapping[str, str],
        conversations: ConversationBook | None = None,
    ) -> list[CheckResult]:
        """The credentials; with ``conversations`` (the store's), each approver's reachability."""
        from tapgate.channels.teams.check import check_teams

        return await check_teams(cast(TeamsConfig, settings), addresses, conversations)


def _address(approver: Any, channel: str) -> str | None:
    return None if approver is None else cast(str | None, approver.address(channel))
