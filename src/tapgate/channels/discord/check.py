"""Discord's live setup check: the bot token, the slash commands, a DM to each approver.

``GET /users/@me`` answers only for a valid bot token (and names the bot);
``POST /users/@me/channels`` opens (or finds) the DM channel with a user id,
and fails for an id that is no user. Whether the approver accepts DMs from
the bot (a shared server, DMs allowed) shows only when a message is sent
(50007 / 50278): the check says so rather than post a test message.
``GET /applications/{id}/commands`` shows whether the slash commands the
server registers at start are there (:mod:`.registration`).
"""

from __future__ import annotations

from collections.abc import Mapping

from tapgate.channels.contract import CheckResult
from tapgate.channels.discord.registration import check_commands
from tapgate.channels.discord.rest import DiscordApiError, DiscordRest
from tapgate.channels.discord.settings import DiscordConfig
from tapgate.delivery.retry import TRANSPORT_ERRORS, describe_error

__all__ = ["check_discord"]


async def check_discord(settings: DiscordConfig, addresses: Mapping[str, str]) -> list[CheckResult]:
    """One result for the token, then one per approver with a Discord id."""
    rest = DiscordRest(
        bot_token=settings.bot_token.get_secret_value(),
        api_base_url=settings.api_base_url,
        timeout=settings.timeout,
    )
    try:
        ok, detail = await _ask(rest, "GET", "/users/@me", None)
        if not ok:
            fix = " (reset the token in the Developer Portal: Bot → Reset Token)"
            return [CheckResult(channel="discord", what="bot token", ok=False, detail=detail + fix)]
        out = [CheckResult(channel="discord", what="bot token", ok=True, detail=detail)]
        out.append(await check_commands(rest, settings.application_id, settings.api_base_url))
        for name, user in addresses.items():
            ok, detail = await _ask(rest, "POST", "/users/@me/channels", {"recipient_id": user})
            if ok:
                detail = "DM channel open; the approver must share a server with the bot"
            else:
                detail += " (copy the user id with Developer Mode on: right-click → Copy User ID)"
            out.append(
                CheckResult(
                    channel="discord", what=f"approver {name} ({user})", ok=ok, detail=detail
                )
            )
        return out
    finally:
        await rest.close()


async def _ask(
    rest: DiscordRest, method: str, path: str, body: dict[str, str] | None
) -> tuple[bool, str]:
    try:
        answer = await rest.call(method, path, body=body)
    except DiscordApiError as error:
        return False, str(error)
    except TRANSPORT_ERRORS as error:
        return False, f"unreachable: {describe_error(error)}"
    if isinstance(answer, dict) and isinstance(answer.get("username"), str):
        return True, f"bot {answer['username']} ({answer.get('id')})"
    return True, ""
