"""The few Discord REST calls tapgate makes, over one aiohttp session, within Discord's limits.

No Discord library: tapgate needs a handful of routes (who am I, open a DM,
post, edit, answer an interaction late, register its slash commands) and no
Gateway connection, and every library worth its name brings a Gateway and
its own event model. This
client owns what those routes share:

- ``Authorization: Bot <token>`` and the ``User-Agent`` Discord requires;
- rate limits (:mod:`.ratelimit`): each call waits for its bucket first;
  a 429 empties the bucket (or, when global, pauses the bot) and is raised
  as :class:`DiscordApiError` with ``retry_after`` so the caller's one retry
  policy decides whether to try again;
- invalid requests: Discord bans an IP for a while past 10,000 responses of
  401, 403 or 429 in ten minutes. Nothing here retries a 401/403/404, and
  after a 401 (a revoked token) the client answers every call itself,
  without asking Discord, for :data:`UNAUTHORIZED_PAUSE` seconds.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import aiohttp

from tapgate.channels.discord.ratelimit import RateLimits, RouteKey

__all__ = ["UNAUTHORIZED_PAUSE", "DiscordApiError", "DiscordRest"]

UNAUTHORIZED_PAUSE = 60.0
"""Seconds no call is made after Discord refused the bot token (401)."""
_USER_AGENT = "DiscordBot (https://github.com/tapgate/tapgate, 0.1)"


class DiscordApiError(Exception):
    """Discord refused a call: the HTTP ``status``, Discord's JSON ``code`` and ``message``.

    ``retry_after`` (seconds) comes with a 429; ``is_global`` says the whole bot is paused.
    """

    def __init__(
        self,
        status: int,
        message: str,
        *,
        code: int | None = None,
        retry_after: float | None = None,
        is_global: bool = False,
    ) -> None:
        super().__init__(f"HTTP {status}" + (f" (code {code})" if code else "") + f": {message}")
        self.status = status
        self.code = code
        self.message = message
        self.retry_after = retry_after
        self.is_global = is_global


class DiscordRest:
    """A bot's REST session against ``api_base_url`` (``https://discord.com/api/v10``).

    Create it inside the running loop, or let the first call do so; close it with :meth:`close`.
    """

    def __init__(
        self,
        *,
        bot_token: str,
        api_base_url: str,
        timeout: float,
        limits: RateLimits | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._base = api_base_url.rstrip("/")
        self._token = bot_token
        self._timeout = timeout
        self.limits = limits or RateLimits(clock=clock)
        self._clock = clock
        self._session: aiohttp.ClientSession | None = None
        self._unauthorized_until = 0.0

    async def call(
        self,
        method: str,
        template: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Mapping[str, Any] | Sequence[Any] | None = None,
        major: str = "",
        auth: bool = True,
    ) -> Any:
        """``method`` on ``template`` filled with ``params``; Discord's JSON answer, or raises.

        ``major`` is the top-level id Discord keys the route's limit by (the
        channel id); ``auth=False`` for the interaction webhook routes, which
        the interaction token authorises.
        """
        if auth and self._clock() < self._unauthorized_until:
            raise DiscordApiError(
                401, "the bot token was refused moments ago; not asking again yet"
            )
        route = RouteKey(method, template, major)
        await self.limits.acquire(route)
        url = self._base + template.format(**(params or {}))
        data = None if body is None else json.dumps(body, ensure_ascii=False).encode("utf-8")
        headers = {"Content-Type": "application/json"} if data is not None else {}
        if auth:
            headers["Authorization"] = f"Bot {self._token}"
        async with self._open().request(method, url, data=data, headers=headers) as response:
            self.limits.update(route, response.headers)
            text = await response.text(errors="replace")
            if response.status < 300:
                return json.loads(text) if text else None
            raise self._error(route, response.status, text, response.headers)

    def _error(
        self, route: RouteKey, status: int, text: str, headers: Mapping[str, str]
    ) -> DiscordApiError:
        try:
            answer = json.loads(text)
        except ValueError:
            answer = None
        answer = answer if isinstance(answer, dict) else {}
        code = answer.get("code") if isinstance(answer.get("code"), int) else None
        message = str(answer.get("message") or text[:200] or "no message")
        if status == 401:
            self._unauthorized_until = self._clock() + UNAUTHORIZED_PAUSE
        if status != 429:
            return DiscordApiError(status, message, code=code)
        retry_after = _seconds(answer.get("retry_after"), headers.get("Retry-After"))
        is_global = answer.get("global") is True or headers.get("X-RateLimit-Global") == "true"
        self.limits.limited(route, retry_after, is_global=is_global)
        return DiscordApiError(
            status, message, code=code, retry_after=retry_after, is_global=is_global
        )

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                headers={"User-Agent": _USER_AGENT},
                timeout=aiohttp.ClientTimeout(total=self._timeout),
                cookie_jar=aiohttp.DummyCookieJar(),
            )
        return self._session

    async def close(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            await session.close()


def _seconds(body_value: object, header: str | None) -> float:
    """The 429's wait: the body's float ``retry_after``, else ``Retry-After``, else one second."""
    for value in (body_value, header):
        if isinstance(value, bool):
            continue
        try:
            seconds = float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            continue
        if 0 <= seconds < 86400:
            return seconds
    return 1.0
