"""Slack's live setup check: the bot token works with the scopes tapgate needs, and
each approver is a member of the workspace.

``auth.test`` answers ``ok`` only for a valid token and reports the granted
scopes in the ``X-OAuth-Scopes`` header; ``users.info`` finds each approver.
"""

from __future__ import annotations

from collections.abc import Mapping

import aiohttp

from tapgate.channels.contract import CheckResult
from tapgate.channels.slack.settings import SlackConfig

__all__ = ["NEEDED_SCOPES", "check_slack"]

NEEDED_SCOPES = ("chat:write", "im:write", "commands", "users:read")
"""What tapgate calls: post and update cards, open DMs, ``/tapgate``, and this check."""


async def check_slack(settings: SlackConfig, addresses: Mapping[str, str]) -> list[CheckResult]:
    """One result for the token and its scopes, then one per approver with a Slack id."""
    base = settings.api_base_url.rstrip("/") + "/"
    token = settings.bot_token.get_secret_value()
    headers = {"Authorization": f"Bearer {token}"}
    timeout = aiohttp.ClientTimeout(total=settings.timeout)
    out: list[CheckResult] = []
    async with aiohttp.ClientSession(headers=headers, timeout=timeout) as session:
        body, scopes = await _call(session, base + "auth.test", {})
        if not body.get("ok"):
            error = body.get("error", "no answer")
            out.append(
                CheckResult(
                    channel="slack",
                    what="bot token",
                    ok=False,
                    detail=f"auth.test: {error} (reinstall the app and copy its xoxb- token)",
                )
            )
            return out
        out.append(CheckResult(channel="slack", what=f"bot token ({body.get('team')})", ok=True))
        missing = [s for s in NEEDED_SCOPES if scopes is not None and s not in scopes]
        out.append(
            CheckResult(
                channel="slack",
                what="scopes",
                ok=not missing,
                detail=f"missing {', '.join(missing)} (add them and reinstall)" if missing else "",
            )
        )
        for name, user in addresses.items():
            info, _ = await _call(session, base + "users.info", {"user": user})
            ok = bool(info.get("ok")) and not _deleted(info)
            detail = "" if ok else f"users.info: {info.get('error', 'deactivated')}"
            out.append(
                CheckResult(channel="slack", what=f"approver {name} ({user})", ok=ok, detail=detail)
            )
    return out


async def _call(
    session: aiohttp.ClientSession, url: str, form: Mapping[str, str]
) -> tuple[dict[str, object], set[str] | None]:
    try:
        async with session.post(url, data=dict(form)) as response:
            header = response.headers.get("X-OAuth-Scopes")
            scopes = {s.strip() for s in header.split(",")} if header is not None else None
            body = await response.json(content_type=None)
            return (body if isinstance(body, dict) else {}), scopes
    except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
        return {"ok": False, "error": f"unreachable: {exc!r}"}, None


def _deleted(info: Mapping[str, object]) -> bool:
    user = info.get("user")
    return isinstance(user, dict) and bool(user.get("deleted"))
