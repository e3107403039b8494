"""Registering tapgate's slash commands with Discord, at start and by hand, and checking them.

A slash command exists in Discord only once the application registered it.
At start the receiver overwrites the application's global commands with
tapgate's (``PUT /applications/{application_id}/commands``, Discord's bulk
overwrite: the same list sent again changes nothing, so a restart is
harmless). A refusal (a revoked bot token: 401) or an unreachable Discord is
logged with the one ``curl`` that does it by hand and never stops the server:
cards and presses work without the commands. ``tapgate doctor`` shows it
(:func:`check_commands` lists the application's commands).

The commands are global, usable in a server and in the bot's DMs
(``contexts`` 0 and 1) of a server-installed app (``integration_types`` 0).
Discord may take a while to show a new global command in its clients.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from tapgate.channels.contract import CheckResult
from tapgate.channels.discord.commands import COMMANDS
from tapgate.channels.discord.rest import DiscordApiError, DiscordRest
from tapgate.delivery.retry import TRANSPORT_ERRORS, describe_error

__all__ = ["check_commands", "command_list", "register_commands", "register_commands_curl"]

_log = logging.getLogger("tapgate.channels.discord")
_PATH = "/applications/{application}/commands"
_CHAT_INPUT = 1
_GUILD, _BOT_DM = 0, 1
_GUILD_INSTALL = 0


def command_list() -> list[dict[str, Any]]:
    """The body of the bulk overwrite: every tapgate command as a CHAT_INPUT command."""
    return [
        {
            "name": name,
            "description": description,
            "type": _CHAT_INPUT,
            "contexts": [_GUILD, _BOT_DM],
            "integration_types": [_GUILD_INSTALL],
        }
        for name, description in COMMANDS.items()
    ]


def register_commands_curl(api_base_url: str, application_id: str) -> str:
    """The ``curl`` that registers the commands by hand (the token as a placeholder)."""
    body = json.dumps(command_list(), separators=(",", ":"))
    url = f"{api_base_url.rstrip('/')}/applications/{application_id}/commands"
    return (
        f'curl -sS -X PUT "{url}" -H "Authorization: Bot $DISCORD_BOT_TOKEN" '
        f"-H 'Content-Type: application/json' -d '{body}'"
    )


async def register_commands(rest: DiscordRest, application_id: str, api_base_url: str) -> bool:
    """Overwrite the application's global commands with tapgate's; whether Discord accepted.

    Never raises: a failure is logged (with the manual command) and the server carries on.
    """
    try:
        await rest.call("PUT", _PATH, params={"application": application_id}, body=command_list())
    except DiscordApiError as error:
        fix = _fix(error)
        _log.error(
            "Discord slash commands not registered (%s)%s; register them by hand with: %s",
            error,
            fix,
            register_commands_curl(api_base_url, application_id),
        )
        return False
    except TRANSPORT_ERRORS as error:
        _log.error(
            "Discord slash commands not registered (%s); register them by hand with: %s",
            describe_error(error),
            register_commands_curl(api_base_url, application_id),
        )
        return False
    _log.info("Discord slash commands registered: %s", ", ".join(f"/{c}" for c in COMMANDS))
    return True


async def check_commands(rest: DiscordRest, application_id: str, api_base_url: str) -> CheckResult:
    """Whether every tapgate command is registered (``GET`` the application's commands)."""
    what = "slash commands"
    try:
        found = await rest.call("GET", _PATH, params={"application": application_id})
    except DiscordApiError as error:
        return CheckResult(channel="discord", what=what, ok=False, detail=f"{error}{_fix(error)}")
    except TRANSPORT_ERRORS as error:
        detail = f"unreachable: {describe_error(error)}"
        return CheckResult(channel="discord", what=what, ok=False, detail=detail)
    listed = found if isinstance(found, list) else []
    names = {command.get("name") for command in listed if isinstance(command, dict)}
    missing = [f"/{name}" for name in COMMANDS if name not in names]
    if missing:
        detail = (
            f"not registered: {', '.join(missing)} (tapgate registers them when the server "
            f"starts; see its log, or run: {register_commands_curl(api_base_url, application_id)})"
        )
        return CheckResult(channel="discord", what=what, ok=False, detail=detail)
    every = ", ".join(f"/{name}" for name in COMMANDS)
    return CheckResult(channel="discord", what=what, ok=True, detail=f"registered: {every}")


def _fix(error: DiscordApiError) -> str:
    if error.status == 401:
        return "; the bot token was refused: reset it in the Developer Portal (Bot → Reset Token)"
    if error.status in (403, 404):
        return "; check channels.discord.application_id is this bot's application"
    return ""
