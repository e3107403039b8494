"""``channels.discord`` and ``approvers[].discord``: the Discord application's config."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, BeforeValidator, SecretStr

from tapgate.config.fields import Duration, HttpUrl, Secret, Section

__all__ = ["DiscordConfig", "parse_discord_user"]

_SNOWFLAKE = re.compile(r"[0-9]{15,21}")
_PUBLIC_KEY = re.compile(r"[0-9a-fA-F]{64}")
_BOT_TOKEN = re.compile(r"[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]+")


def _application_id(value: str) -> str:
    if not _SNOWFLAKE.fullmatch(value):
        raise ValueError(
            "expected the application id: 15-21 digits "
            "(Developer Portal → your application → General Information → Application ID)"
        )
    return value


def _digits(value: object) -> object:
    """YAML reads an unquoted id as an integer: take it as the digits it was written with."""
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


def _bot_token(value: SecretStr) -> SecretStr:
    # A bot token is three base64url parts joined by dots; a client secret or a
    # public key pasted here would only fail at the first send, as a 401.
    if not _BOT_TOKEN.fullmatch(value.get_secret_value()):
        raise ValueError(
            "expected a bot token: three parts separated by dots "
            "(Developer Portal → Bot → Reset Token; not the client secret)"
        )
    return value


def _public_key(value: str) -> str:
    if not _PUBLIC_KEY.fullmatch(value):
        raise ValueError(
            "expected the application's public key: 64 hex digits "
            "(Developer Portal → General Information → Public Key)"
        )
    return value.lower()


class DiscordConfig(Section):
    """A Discord application whose bot DMs each approver and whose endpoint receives presses.

    ``public_key`` verifies every interaction (Ed25519) and is not a secret;
    ``bot_token`` sends and edits the cards. ``timeout`` bounds each REST call.
    """

    application_id: Annotated[str, BeforeValidator(_digits), AfterValidator(_application_id)]
    public_key: Annotated[str, AfterValidator(_public_key)]
    bot_token: Annotated[Secret, AfterValidator(_bot_token)]
    api_base_url: HttpUrl = "https://discord.com/api/v10"
    timeout: Duration = 10.0


def parse_discord_user(value: str) -> str:
    """A Discord user id (a snowflake): 15-21 digits, never a user name."""
    # A user name changes and is not what an interaction carries: the approver
    # would never match a press.
    if not _SNOWFLAKE.fullmatch(value):
        raise ValueError(
            "expected a Discord user id: 15-21 digits (User Settings → Advanced → "
            "Developer Mode, then right-click the user → Copy User ID)"
        )
    return value
