"""``channels.telegram`` and ``approvers[].telegram``: the Telegram Bot API channel's config."""

from __future__ import annotations

import re
from typing import Annotated, Literal, Self

from pydantic import Field, model_validator

from tapgate.config.fields import Duration, HttpUrl, Secret, Section

__all__ = [
    "TelegramConfig",
    "check_bot_token",
    "check_webhook_secret",
    "parse_telegram_user",
]

# BotFather's tokens: the bot's numeric id, a colon, then 35 URL-safe characters.
_BOT_TOKEN = re.compile(r"[0-9]{1,20}:[A-Za-z0-9_-]{30,100}")
# Telegram's own rule for setWebhook's secret_token, sent back in a header on every call.
_WEBHOOK_SECRET = re.compile(r"[A-Za-z0-9_-]{1,256}")
# A user id is positive (groups and channels are negative) and fits in 52 bits.
_USER_ID = re.compile(r"[1-9][0-9]{0,15}")

ReasonWindow = Annotated[Duration, Field(ge=10.0, le=3600.0)]
"""How long a typed reason is waited for: 10 s to 1 h, as on LINE."""
PollTimeout = Annotated[int, Field(ge=0, le=50)]
"""getUpdates' long-poll ``timeout`` in seconds (Telegram holds the call open up to this)."""


def check_bot_token(value: str) -> str:
    """``value`` if it has the shape of a BotFather token (``123456:AA…``), else ``ValueError``."""
    if not _BOT_TOKEN.fullmatch(value):
        raise ValueError(
            "expected a Telegram bot token as @BotFather gives it: the bot's number, "
            "a colon, then about 35 letters, digits, '_' or '-'"
        )
    return value


def check_webhook_secret(value: str) -> str:
    """``value`` if Telegram accepts it as ``secret_token``: 1-256 of ``A-Z a-z 0-9 _ -``."""
    if not _WEBHOOK_SECRET.fullmatch(value):
        raise ValueError(
            "expected 1-256 characters of A-Z, a-z, 0-9, '_' and '-' "
            "(Telegram refuses any other secret_token)"
        )
    return value


class TelegramConfig(Section):
    """A Telegram bot that messages each approver in their private chat with it.

    ``mode``: ``polling`` (the default: tapgate long-polls ``getUpdates``, no
    public URL needed) or ``webhook`` (Telegram posts to
    ``POST /webhooks/telegram`` with ``webhook_secret`` in a header; tapgate
    registers the webhook at start when ``server.public_url`` is set).
    ``reason_window``: after Deny, how long the approver's next message is
    taken as the reason. ``pace``: seconds between two messages to one chat
    (Telegram asks for no more than about one a second).
    """

    bot_token: Secret
    mode: Literal["polling", "webhook"] = "polling"
    webhook_secret: Secret | None = None
    api_base_url: HttpUrl = "https://api.telegram.org"
    timeout: Duration = 10.0
    poll_timeout: PollTimeout = 30
    reason_window: ReasonWindow = 300.0
    pace: Duration = 1.0

    @model_validator(mode="after")
    def _shapes(self) -> Self:
        # A wrong token or secret fails only when Telegram is first asked; say so at load.
        check_bot_token(self.bot_token.get_secret_value())
        if self.webhook_secret is not None:
            check_webhook_secret(self.webhook_secret.get_secret_value())
        elif self.mode == "webhook":
            raise ValueError(
                "mode: webhook needs webhook_secret (1-256 characters of A-Z, a-z, 0-9, _ and -): "
                "without it anyone could post presses to /webhooks/telegram"
            )
        return self


def parse_telegram_user(value: str) -> str:
    """A Telegram user id as presses carry it (``from.id``): a positive number."""
    # A wrong id never matches a press and cannot be messaged: the approver
    # would be silently unreachable.
    text = value.strip()
    if not _USER_ID.fullmatch(text):
        raise ValueError(
            "expected a Telegram user id: a positive number (send /start to the bot "
            "and it answers with yours; a negative id is a group, not a person)"
        )
    return text
