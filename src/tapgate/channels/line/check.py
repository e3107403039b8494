"""LINE's live setup check: the access token works, and each approver has added the bot.

``GET /v2/bot/info`` answers only for a valid channel access token;
``GET /v2/bot/profile/{userId}`` answers only for a user who has added the bot
as a friend (and not blocked it): exactly the users a push can reach.
"""

from __future__ import annotations

from collections.abc import Mapping

import aiohttp

from tapgate.channels.contract import CheckResult
from tapgate.channels.line.settings import LineConfig

__all__ = ["check_line"]


async def check_line(settings: LineConfig, addresses: Mapping[str, str]) -> list[CheckResult]:
    """One result for the token, then one per approver with a LINE id."""
    base = settings.api_base_url.rstrip("/")
    token = settings.channel_access_token.get_secret_value()
    headers = {"Authorization": f"Bearer {token}"}
    timeout = aiohttp.ClientTimeout(total=settings.timeout)
    out: list[CheckResult] = []
    async with aiohttp.ClientSession(headers=headers, timeout=timeout) as session:
        status, body = await _get(session, f"{base}/v2/bot/info")
        if status != 200:
            out.append(
                CheckResult(
                    channel="line",
                    what="channel access token",
                    ok=False,
                    detail=f"GET /v2/bot/info answered {status}: {body}"
                    " (reissue the token in the LINE Developers console)",
                )
            )
            return out
        out.append(CheckResult(channel="line", what="channel access token", ok=True))
        for name, user in addresses.items():
            status, body = await _get(session, f"{base}/v2/bot/profile/{user}")
            ok = status == 200
            detail = "" if ok else f"{status}: {body} (the user must add the bot as a friend)"
            out.append(
                CheckResult(
                    channel="line",
                    what=f"approver {name} ({user})",
                    ok=ok,
                    detail=detail,
                    approver=name,
                )
            )
    return out


async def _get(session: aiohttp.ClientSession, url: str) -> tuple[int, str]:
    try:
        async with session.get(url) as response:
            return response.status, (await response.text())[:200]
    except (aiohttp.ClientError, TimeoutError) as exc:
        return 0, f"unreachable: {exc!r}"
