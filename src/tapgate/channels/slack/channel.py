"""Slack as a tapgate channel: the contract's methods over Slack's notifier and webhook.

Cards are Block Kit DMs (:mod:`.notifier`); interactions arrive at
``POST /webhooks/slack`` (or over Socket Mode when ``app_token`` is set, so no
route is added), verified on the raw bytes (:mod:`.signature`) and recorded
before the ack (:mod:`.webhook`). slack-sdk and slack-bolt load when the
notifier or receiver is built, never at import.
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
from tapgate.channels.slack.settings import SlackConfig, parse_slack_user
from tapgate.config.fields import NonEmptyStr
from tapgate.delivery.notifier import Notifier

__all__ = ["SlackChannel"]


class SlackChannel(ChannelDefaults):
    """A Slack app: a DM per approver, interactions over HTTP or Socket Mode."""

    name = "slack"
    settings_model: type[BaseModel] = SlackConfig
    # Slack ids are unique only within a workspace: ``slack_team`` scopes one.
    address = AddressField(parse=parse_slack_user, team_field="slack_team")
    approver_fields: Mapping[str, Any] = {"slack_team": NonEmptyStr}

    def notifier(self, settings: BaseModel, host: DeliveryHost) -> Notifier:
        from tapgate.channels.slack.notifier import SlackNotifier  # the SDK loads only when used

        slack = cast(SlackConfig, settings)
        return SlackNotifier(
            slack.bot_token.get_secret_value(),
            api_base_url=slack.api_base_url,
            timeout=slack.timeout,
            channel_id=slack.channel,
            tool_shell_args=host.tool_shell_args,
            offers=host.offers,
            inbox_button=host.inbox_button,
        )

    def pace(self, settings: BaseModel) -> float | None:
        return cast(SlackConfig, settings).pace

    def routes(self, settings: BaseModel) -> Sequence[Route]:
        if cast(SlackConfig, settings).app_token is not None:
            return ()  # Socket Mode: interactions come over the app's WebSocket
        return (Route(method="POST", path="/webhooks/slack", name="webhook"),)

    async def start(self, settings: BaseModel, host: ChannelHost) -> Receiver | None:
        from tapgate.channels.slack.webhook import SlackWebhook

        slack = cast(SlackConfig, settings)
        webhook = SlackWebhook(
            gate=host.gate,
            signing_secret=slack.signing_secret.get_secret_value(),
            bot_token=slack.bot_token.get_secret_value(),
            api_base_url=slack.api_base_url,
            team_id=slack.team_id,
            timeout=slack.timeout,
            on_reject=host.on_reject,
            on_decision=host.on_decision,
            inbox=host.inbox,
            tap_log=host.tap_log,
            links=host.links,
        )
        if slack.app_token is not None:
            try:
                await webhook.start_socket_mode(slack.app_token.get_secret_value())
            except BaseException:
                await webhook.close()
                raise
        return webhook

    async def check(
        self,
        settings: BaseModel,
        addresses: Mapping[str, str],
        conversations: ConversationBook | None = None,
    ) -> list[CheckResult]:
        del conversations  # nothing here depends on a stored conversation
        from tapgate.channels.slack.check import check_slack

        return await check_slack(cast(SlackConfig, settings), addresses)
