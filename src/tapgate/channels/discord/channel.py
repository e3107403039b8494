"""Discord as a tapgate channel: the contract over the notifier and the interactions endpoint.

Cards go to each approver's DM with the bot (:mod:`.notifier`); presses
arrive at ``POST /webhooks/discord`` (the application's Interactions
Endpoint URL), verified with the application's Ed25519 public key on the raw
bytes and recorded before they decide (:mod:`.webhook`). Nothing heavy is
imported here: the registry imports this module for every config it reads.

The receiver redraws a pressed card exactly as the outbox draws it, which
needs the same facts the notifier gets (which argument holds a shell
command, which remember buttons a request offers). The contract hands
those to :meth:`notifier` only, so the channel keeps them from there; a
receiver started without a notifier (never, in the server) draws cards
without them.
"""

from __future__ import annotations

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
from tapgate.channels.discord.settings import DiscordConfig, parse_discord_user
from tapgate.delivery.notifier import Notifier

__all__ = ["DiscordChannel"]


class DiscordChannel(ChannelDefaults):
    """A Discord application: its bot DMs approvers, its endpoint receives their presses."""

    name = "discord"
    settings_model: type[BaseModel] = DiscordConfig
    address = AddressField(parse=parse_discord_user)

    def __init__(self) -> None:
        self._delivery = DeliveryHost()

    def notifier(self, settings: BaseModel, host: DeliveryHost) -> Notifier:
        from tapgate.channels.discord.notifier import DiscordNotifier
        from tapgate.channels.discord.rest import DiscordRest

        self._delivery = host
        discord = cast(DiscordConfig, settings)
        return DiscordNotifier(
            _rest(discord, DiscordRest),
            tool_shell_args=host.tool_shell_args,
            offers=host.offers,
            inbox_button=host.inbox_button,
        )

    def pace(self, settings: BaseModel) -> float | None:
        del settings
        return None  # Discord's buckets pace the bot (ratelimit.py)

    def routes(self, settings: BaseModel) -> Sequence[Route]:
        del settings
        return (Route(method="POST", path="/webhooks/discord", name="interactions"),)

    async def start(self, settings: BaseModel, host: ChannelHost) -> Receiver | None:
        from tapgate.channels.discord.commands import DiscordCommands
        from tapgate.channels.discord.presses import DiscordPresses
        from tapgate.channels.discord.registration import register_commands
        from tapgate.channels.discord.rest import DiscordRest
        from tapgate.channels.discord.signature import Verifier
        from tapgate.channels.discord.webhook import DiscordInteractions, _log
        from tapgate.channels.tap_log import TapLog

        discord = cast(DiscordConfig, settings)
        tap_log = TapLog(_log, "Discord", level=host.tap_log, on_decision=host.on_decision)
        presses = DiscordPresses(
            host.gate,
            tap_log=tap_log,
            tool_shell_args=self._delivery.tool_shell_args,
            offers=self._delivery.offers,
            commands=DiscordCommands(host.gate, host.links),
            inbox_button=self._delivery.inbox_button,
        )
        rest = _rest(discord, DiscordRest)
        # The slash commands: registered (idempotently) before presses arrive; a
        # refusal is logged with the manual command and shows in `tapgate doctor`.
        await register_commands(rest, discord.application_id, discord.api_base_url)
        return DiscordInteractions(
            verifier=Verifier(discord.public_key),
            application_id=discord.application_id,
            presses=presses,
            rest=rest,
            inbox=host.inbox,
            tap_log=tap_log,
            on_reject=host.on_reject,
        )

    async def check(
        self,
        settings: BaseModel,
        addresses: Mapping[str, str],
        conversations: ConversationBook | None = None,
    ) -> list[CheckResult]:
        del conversations  # nothing here depends on a stored conversation
        from tapgate.channels.discord.check import check_discord

        return await check_discord(cast(DiscordConfig, settings), addresses)


def _rest(settings: DiscordConfig, rest: Any) -> Any:
    return rest(
        bot_token=settings.bot_token.get_secret_value(),
        api_base_url=settings.api_base_url,
        timeout=settings.timeout,
    )
