"""A small direct client of the Telegram Bot API: JSON over HTTPS, one method per call.

tapgate uses seven methods (``sendMessage``, ``editMessageText``,
``answerCallbackQuery``, ``getUpdates``, ``setWebhook``, ``getMe``,
``getChat``); a framework would add routing and handlers tapgate already has
(and a licence or version pins), so this is ~one function over aiohttp.

Every answer is ``{"ok": bool, "result" | "description", "error_code",
"parameters"}``. A failure becomes :class:`BotApiError` carrying the status,
Telegram's description and ``parameters.retry_after``.

Flood control: a 429 blocks *all* of a bot's calls, not only the chat that
tripped it, so the wait is shared by every client of one bot in the process
(:class:`FloodGate`, found by :func:`flood_gate`): after a 429 with
``retry_after: N``, each send waits until those N seconds have passed before
it is made. Answers to presses (``answerCallbackQuery``) and the long poll
itself do not wait: a press must stop spinning, and updates keep arriving.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import aiohttp

__all__ = ["BotApi", "BotApiError", "FloodGate", "flood_gate"]

_QUERY_TOO_OLD = "query is too old"
_NOT_MODIFIED = "message is not modified"
_UNPACED = frozenset({"answerCallbackQuery", "getUpdates", "getMe", "getChat", "setWebhook"})


class BotApiError(Exception):
    """Telegram said no (``ok: false``), or answered with something that is not the Bot API.

    ``status`` is the HTTP status (``error_code``), ``description`` Telegram's
    own words ("Forbidden: bot was blocked by the user"), ``retry_after`` the
    seconds a 429 asks to wait.
    """

    def __init__(
        self, method: str, status: int, description: str, *, retry_after: float | None = None
    ) -> None:
        self.method = method
        self.status = status
        self.description = description
        self.retry_after = retry_after
        super().__init__(f"Telegram {method} failed: HTTP {status}: {description}")

    @property
    def query_too_old(self) -> bool:
        """A press answered after Telegram stopped waiting: not an error for tapgate."""
        return self.status == 400 and _QUERY_TOO_OLD in self.description.lower()

    @property
    def not_modified(self) -> bool:
        """An edit that changes nothing (the card already shows this)."""
        return self.status == 400 and _NOT_MODIFIED in self.description.lower()


class FloodGate:
    """The moment a bot may send again after a 429, shared by all its clients."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._until = 0.0

    def pause(self, seconds: float) -> None:
        """Hold every send of this bot for ``seconds`` from now (never shortens a wait)."""
        self._until = max(self._until, self._clock() + max(0.0, seconds))

    def remaining(self) -> float:
        """Seconds until sends may resume (0 when they may now)."""
        return max(0.0, self._until - self._clock())


_GATES: dict[str, FloodGate] = {}


def flood_gate(base_url: str, token: str, clock: Callable[[], float] = time.monotonic) -> FloodGate:
    """The one :class:`FloodGate` of the bot ``token`` at ``base_url`` in this process.

    ``clock`` is the gate's if this call makes it (the first client of the bot).
    """
    key = hashlib.sha256(f"{base_url}\0{token}".encode()).hexdigest()
    if key not in _GATES:
        _GATES[key] = FloodGate(clock)
    return _GATES[key]


class BotApi:
    """Calls Bot API methods for one bot; the aiohttp session opens on the first call.

    ``timeout`` bounds each call (a long poll adds its own ``timeout`` to it);
    ``sleep`` and ``clock`` (the flood gate's) are injectable so tests never
    wait out a flood.
    """

    def __init__(
        self,
        token: str,
        *,
        base_url: str = "https://api.telegram.org",
        timeout: float = 10.0,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._base = f"{base_url.rstrip('/')}/bot{token}/"
        self._timeout = timeout
        self._sleep = sleep
        self._flood = flood_gate(base_url.rstrip("/"), token, clock)
        self._session: aiohttp.ClientSession | None = None

    async def call(
        self, method: str, payload: Mapping[str, Any] | None = None, *, wait: float = 0.0
    ) -> Any:
        """``method`` with ``payload`` as JSON; its ``result``, or :class:`BotApiError`.

        ``wait`` extends the timeout (a long poll's own ``timeout``). Transport
        failures (timeouts, resets) are raised as aiohttp raises them.
        """
        if method not in _UNPACED:
            while (left := self._flood.remaining()) > 0:
                await self._sleep(left)
        timeout = aiohttp.ClientTimeout(total=self._timeout + wait)
        async with self._client().post(
            self._base + method, json=dict(payload or {}), timeout=timeout
        ) as response:
            raw = await response.read()
            status = response.status
        return self._result(method, status, raw)

    def _result(self, method: str, status: int, raw: bytes) -> Any:
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        if not isinstance(body, dict):
            raise BotApiError(method, status, f"not a Bot API answer ({raw[:80]!r})")
        if body.get("ok") is True and status == 200:
            return body.get("result")
        code = body.get("error_code")
        code = code if isinstance(code, int) else status
        retry_after = _retry_after(body.get("parameters"))
        if code == 429 and retry_after is not None:
            self._flood.pause(retry_after)  # every send of this bot waits, not only this chat's
        description = str(body.get("description") or "no description")
        raise BotApiError(method, code, description, retry_after=retry_after)

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession()
        return self._session

    async def close(self) -> None:
        """Close the HTTP session (a later call opens a new one)."""
        session, self._session = self._session, None
        if session is not None:
            await session.close()


def _retry_after(parameters: object) -> float | None:
    if not isinstance(parameters, dict):
        return None
    value = parameters.get("retry_after")
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        return None
    return float(value)
