"""Webhook mode's one-time set-up: tell Telegram where to post, with the secret it must send back.

With ``server.public_url`` tapgate calls ``setWebhook`` at start (HTTPS
only, ports 443, 80, 88 or 8443: Telegram's rule) with ``secret_token`` and
``allowed_updates``; without one it logs the one command that does it, with
placeholders rather than the token and the secret (logs are read by more
people than the config is).
"""

from __future__ import annotations

import json
import logging

import aiohttp

from tapgate.channels.telegram.api import BotApi, BotApiError
from tapgate.channels.telegram.receiver import ALLOWED_UPDATES
from tapgate.channels.telegram.settings import TelegramConfig

__all__ = ["register_webhook", "set_webhook_command"]

_log = logging.getLogger("tapgate.channels.telegram")
_PATH = "/webhooks/telegram"


def set_webhook_command(api_base_url: str, public_url: str | None) -> str:
    """The ``curl`` that registers the webhook by hand (token and secret as placeholders)."""
    url = (public_url or "https://YOUR-PUBLIC-HOST").rstrip("/") + _PATH
    updates = json.dumps(list(ALLOWED_UPDATES))
    return (
        f'curl -sS "{api_base_url.rstrip("/")}/bot$TELEGRAM_BOT_TOKEN/setWebhook" '
        f"-d url={url} -d secret_token=$TELEGRAM_WEBHOOK_SECRET "
        f"-d 'allowed_updates={updates}'"
    )


async def register_webhook(api: BotApi, settings: TelegramConfig, public_url: str | None) -> bool:
    """``setWebhook`` when the public URL is known; whether Telegram accepted it (never raises)."""
    if public_url is None:
        _log.warning(
            "Telegram webhook mode without server.public_url: register the webhook once with: %s",
            set_webhook_command(settings.api_base_url, None),
        )
        return False
    assert settings.webhook_secret is not None  # the settings refuse webhook mode without one
    fields = {
        "url": public_url.rstrip("/") + _PATH,
        "secret_token": settings.webhook_secret.get_secret_value(),
        "allowed_updates": list(ALLOWED_UPDATES),
    }
    try:
        await api.call("setWebhook", fields)
    except (BotApiError, aiohttp.ClientError, TimeoutError, OSError) as error:
        _log.error(
            "Telegram setWebhook failed (%s); presses will not arrive until it is set: %s",
            error,
            set_webhook_command(settings.api_base_url, public_url),
        )
        return False
    _log.info("Telegram webhook set to %s", fields["url"])
    return True
