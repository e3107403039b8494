"""The ``channels`` section: the console, LINE and Slack, each present only when configured."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from tapgate.bot.config.fields import Duration, HttpUrl, NonEmptyStr, Secret, Section

__all__ = ["ChannelsConfig", "ConsoleConfig", "LineConfig", "SlackConfig"]


class ConsoleConfig(Section):
    """Print requests on the server's console: for trying tapgate without a chat app."""

    enabled: bool = True


ReasonWindow = Annotated[Duration, Field(ge=10.0, le=3600.0)]
"""How long LINE waits for a typed reason: 10 s to 1 h (a deny must not wait longer)."""


class LineConfig(Section):
    """The LINE Messaging API channel that pushes requests and receives taps.

    ``reason_window``: after "Deny…" (or a question's Reply), how long the
    approver's next text message is taken as the reason (the answer); when
    it ends without one, the deny is made without a reason.
    """

    channel_access_token: Secret
    channel_secret: Secret
    api_base_url: HttpUrl = "https://api.line.me"
    timeout: Duration = 10.0
    reason_window: ReasonWindow = 300.0


class SlackConfig(Section):
    """The Slack app; ``app_token`` (``xapp-``) switches to Socket Mode."""

    bot_token: Secret
    signing_secret: Secret
    app_token: Secret | None = None
    api_base_url: HttpUrl = "https://slack.com/api/"
    channel: NonEmptyStr | None = None
    team_id: NonEmptyStr | None = None
    timeout: Duration = 10.0
    pace: Duration = 1.0


class ChannelsConfig(Section):
    """The notification channels; a section that is absent is not configured."""

    console: ConsoleConfig | None = None
    line: LineConfig | None = None
    slack: SlackConfig | None = None
