"""tapgate's side of the Bot Connector REST API: a token for the bot, then send and update.

Outbound calls carry a client-credentials token of the bot's own Entra app
(single-tenant: ``https://login.microsoftonline.com/{tenant}/oauth2/v2.0/token``,
scope ``https://api.botframework.com/.default``), fetched once and reused
until shortly before it expires; a 401 from the Connector drops it and the
call is tried once more with a new one.

Two calls are used: ``POST {serviceUrl}/v3/conversations/{id}/activities``
(a new card) and ``PUT .../activities/{activityId}`` (``updateActivity``: a
card redrawn in place). Microsoft asks bots to retry 429, 412, 502 and 504
with backoff (its "Optimize your bot with rate limiting" page); those and
the other 5xx are retryable :class:`~tapgate.errors.DeliveryError`\\ s for the
notifier's one retry policy. A 403 (the user removed the app, or never
installed it), a 404 (no such conversation) and a 413 (too large) are
permanent.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import quote

import aiohttp

from tapgate.delivery.retry import TRANSPORT_ERRORS, describe_error, parse_retry_after
from tapgate.errors import DeliveryError, PermanentDeliveryError

__all__ = ["SCOPE", "BotTokens", "Connector", "TokenRefused"]

SCOPE = "https://api.botframework.com/.default"
"""The scope of a token the Bot Connector accepts from a bot."""
_EARLY = 300.0  # renew this long before expiry: a token must not expire in flight
_RETRIED = frozenset({412, 429, 502, 504})


class TokenRefused(PermanentDeliveryError):
    """The token endpoint refused the bot's credentials: no retry will fix that."""


class BotTokens:
    """Client-credentials tokens for one bot, cached until shortly before they expire."""

    def __init__(
        self,
        *,
        app_id: str,
        app_password: str,
        token_url: str,
        session: Callable[[], aiohttp.ClientSession],
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        self._form = {
            "grant_type": "client_credentials",
            "client_id": app_id,
            "client_secret": app_password,
            "scope": SCOPE,
        }
        self._url = token_url
        self._session = session
        self._now = now
        self._token: str | None = None
        self._until = 0.0
        self._lock = asyncio.Lock()

    async def get(self) -> str:
        """A valid access token (fetched once for many concurrent callers)."""
        if self._token is not None and self._now() < self._until:
            return self._token
        async with self._lock:
            if self._token is None or self._now() >= self._until:
                self._token, self._until = await self._fetch()
        return self._token

    def forget(self, token: str) -> None:
        """Drop ``token`` (the Connector refused it); the next call fetches a new one."""
        if self._token == token:
            self._token = None

    async def _fetch(self) -> tuple[str, float]:
        try:
            async with self._session().post(self._url, data=self._form) as response:
                status, raw = response.status, await response.read()
        except TRANSPORT_ERRORS as error:
            raise DeliveryError(f"Teams token request failed: {describe_error(error)}") from error
        body = _json(raw)
        if status != 200:
            detail = body.get("error_description") or body.get("error") or raw[:200]
            text = f"Teams token request answered {status}: {str(detail)[:300]}"
            if status in (400, 401, 403):  # wrong id, secret or tenant
                raise TokenRefused(text, status=status)
            raise DeliveryError(text, status=status)
        token, expires_in = body.get("access_token"), body.get("expires_in")
        if not isinstance(token, str) or not token:
            raise DeliveryError("Teams token endpoint answered without an access_token")
        lifetime = float(expires_in) if isinstance(expires_in, int | float | str) else 3600.0
        return token, self._now() + max(lifetime - _EARLY, lifetime / 2)


class Connector:
    """Sends and updates activities at a conversation's service URL, as the bot."""

    def __init__(self, tokens: BotTokens, session: Callable[[], aiohttp.ClientSession]) -> None:
        self._tokens = tokens
        self._session = session

    async def send(
        self, service_url: str, conversation_id: str, activity: Mapping[str, Any]
    ) -> str:
        """Post ``activity`` to the conversation; the new activity's id."""
        url = f"{_base(service_url)}/v3/conversations/{_quote(conversation_id)}/activities"
        body = await self._call("POST", url, activity)
        ident = body.get("id")
        return str(ident) if ident else ""

    async def update(
        self,
        service_url: str,
        conversation_id: str,
        activity_id: str,
        activity: Mapping[str, Any],
    ) -> None:
        """Replace the activity ``activity_id`` (``updateActivity``) with ``activity``."""
        conversation, ident = _quote(conversation_id), _quote(activity_id)
        url = f"{_base(service_url)}/v3/conversations/{conversation}/activities/{ident}"
        await self._call("PUT", url, {**activity, "id": activity_id})

    async def _call(self, method: str, url: str, activity: Mapping[str, Any]) -> dict[str, Any]:
        for attempt in (1, 2):
            token = await self._tokens.get()
            headers = {"Authorization": f"Bearer {token}"}
            try:
                async with self._session().request(
                    method, url, json=activity, headers=headers
                ) as response:
                    status, raw = response.status, await response.read()
                    retry_after = parse_retry_after(response.headers.get("Retry-After"))
            except TRANSPORT_ERRORS as error:
                raise DeliveryError(f"Teams {method} failed: {describe_error(error)}") from error
            if status == 401 and attempt == 1:  # an expired or revoked token: one fresh try
                self._tokens.forget(token)
                continue
            if 200 <= status < 300:
                return _json(raw)
            raise _error(method, status, raw, retry_after)
        raise PermanentDeliveryError(f"Teams {method} refused the bot's token twice", status=401)


def _error(method: str, status: int, raw: bytes, retry_after: float | None) -> DeliveryError:
    body = _json(raw)
    error = body.get("error")
    code = error.get("code") if isinstance(error, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    text = f"Teams {method} answered {status}: {code or ''} {str(message or raw[:200])[:300]}"
    if status in _RETRIED or status >= 500:
        return DeliveryError(text.strip(), status=status, retry_after=retry_after)
    if status == 403:
        text += " (the approver must install the tapgate app in Teams)"
    return PermanentDeliveryError(text.strip(), status=status)


def _base(service_url: str) -> str:
    return service_url.rstrip("/")


def _quote(part: str) -> str:
    return quote(part, safe=":@;=-_.")


def _json(raw: bytes) -> dict[str, Any]:
    try:
        value = json.loads(raw) if raw else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
