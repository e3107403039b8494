"""Telegram's live setup check: the token works, the mode is set up, each approver started the bot.

``getMe`` answers only for a valid token; ``getChat`` with a user's id
answers only when that user has a private chat with the bot (they pressed
Start and have not blocked it): exactly the people ``sendMessage`` can reach.
In webhook mode ``getWebhookInfo`` says whether Telegram has a URL to post to.

Each approver's line names them (``CheckResult.approver``): doctor counts an
approver reachable on Telegram by their own line, so one approver who never
pressed Start does not make the others look unreachable. An API that cannot
be reached (a wrong ``api_base_url``, no route out, nothing answering within
``timeout``) is told as that, with the address asked: the token may be fine.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import aiohttp

from tapgate.channels.contract import CheckResult
from tapgate.channels.telegram.api import BotApi, BotApiError
from tapgate.channels.telegram.notifier import unreachable_hint
from tapgate.channels.telegram.settings import TelegramConfig

__all__ = ["check_telegram"]

_UNREACHABLE = "unreachable"


async def check_telegram(
    settings: TelegramConfig, addresses: Mapping[str, str]
) -> list[CheckResult]:
    """One result for the token, one for webhook mode, then one per approver with a Telegram id."""
    api = BotApi(
        settings.bot_token.get_secret_value(),
        base_url=settings.api_base_url,
        timeout=settings.timeout,
    )
    try:
        me, failed = await _ask(api, "getMe", {})
        if failed is not None:
            fix = (
                f"check api_base_url ({settings.api_base_url}) and that this host can reach it"
                if failed.startswith(_UNREACHABLE)
                else "check bot_token; @BotFather /token shows it"
            )
            detail = f"getMe failed: {failed} ({fix})"
            return [CheckResult(channel="telegram", what="bot token", ok=False, detail=detail)]
        name = me.get("username", "?") if isinstance(me, dict) else "?"
        out = [CheckResult(channel="telegram", what="bot token", ok=True, detail=f"@{name}")]
        if settings.mode == "webhook":
            out.append(await _webhook(api))
        for approver, user in addresses.items():
            _, failed = await _ask(api, "getChat", {"chat_id": user})
            detail = "" if failed is None else f"{failed} ({unreachable_hint(approver, user)})"
            what = f"approver {approver} ({user})"
            out.append(
                CheckResult(
                    channel="telegram",
                    what=what,
                    ok=failed is None,
                    detail=detail,
                    approver=approver,
                )
            )
        return out
    finally:
        await api.close()


async def _webhook(api: BotApi) -> CheckResult:
    info, failed = await _ask(api, "getWebhookInfo", {})
    url = info.get("url") if isinstance(info, dict) else None
    if failed is not None or not url:
        why = failed or "no webhook is set"
        detail = f"{why} (set server.public_url so tapgate registers it at start)"
        return CheckResult(channel="telegram", what="webhook", ok=False, detail=detail)
    error = info.get("last_error_message") if isinstance(info, dict) else None
    detail = str(url) + (f"; Telegram's last error: {error}" if error else "")
    return CheckResult(channel="telegram", what="webhook", ok=not error, detail=detail)


async def _ask(api: BotApi, method: str, fields: Mapping[str, Any]) -> tuple[Any, str | None]:
    try:
        return await api.call(method, fields), None
    except BotApiError as error:
        return None, f"HTTP {error.status}: {error.description[:200]}"
    except (aiohttp.ClientError, TimeoutError, OSError) as error:
        return None, f"{_UNREACHABLE}: {type(error).__name__}"
