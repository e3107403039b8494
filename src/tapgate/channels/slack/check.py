"""Slack's live setup check: the bot token works with the scopes tapgate needs, and
each approver can be sent a DM.

``auth.test`` answers ``ok`` only for a valid token (``invalid_auth``,
``token_revoked``, ``account_inactive`` otherwise) and reports the granted
scopes in the ``X-OAuth-Scopes`` header. The scopes needed are the app
manifest's (docs/slack-app-manifest.yaml), which leaves ``users:read`` out on
purpose; so each approver is looked up with ``users.info`` where the token
has that scope (a deactivated account reads ``deleted``), and otherwise
with ``conversations.open``, the very call that opens their DM before the
first card (``user_not_found``, ``user_disabled``).
"""

from __future__ import annotations

from collections.abc import Mapping

import aiohttp

from tapgate.channels.contract import CheckResult
from tapgate.channels.slack.settings import SlackConfig

__all__ = ["NEEDED_SCOPES", "check_slack"]

NEEDED_SCOPES = ("chat:write", "im:write", "im:history", "commands")
"""What tapgate calls: post and update cards, open DMs, find a message a lost
response posted (``conversations.history``), ``/tapgate``."""


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
            ok, detail = await _reach(session, base, user, scopes)
            out.append(
                CheckResult(
                    channel="slack",
                    what=f"approver {name} ({user})",
                    ok=ok,
                    detail=detail,
                    approver=name,
                )
            )
    return out


async def _reach(
    session: aiohttp.ClientSession, base: str, user: str, scopes: set[str] | None
) -> tuple[bool, str]:
    """Whether ``user`` can be sent a DM, and if not, what Slack said."""
    if scopes is not None and "users:read" in scopes:
        info, _ = await _call(session, base + "users.info", {"user": user})
        if info.get("ok") and _deleted(info):
            return False, "users.info: the account is deactivated"
        method = "users.info"
    else:
        info, _ = await _call(session, base + "conversations.open", {"users": user})
        method = "conversations.open"
    if info.get("ok"):
        return True, ""
    return False, f"{method}: {info.get('error', 'no answer')} (check the member id and team)"


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
