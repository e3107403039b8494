"""``channels.slack`` and ``approvers[].slack``: the Slack app's config."""

from __future__ import annotations

import re

from tapgate.config.fields import Duration, HttpUrl, NonEmptyStr, Secret, Section

__all__ = ["SlackConfig", "parse_slack_user"]

_SLACK_USER = re.compile(r"[UW][A-Z0-9]+")


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


def parse_slack_user(value: str) -> str:
    """A Slack member id: ``U`` or ``W`` (Enterprise Grid), then upper-case letters and digits."""
    if not _SLACK_USER.fullmatch(value):
        raise ValueError(
            "expected a Slack member id: U or W, then upper-case letters and digits "
            "(profile → ⋮ → Copy member ID)"
        )
    return value
