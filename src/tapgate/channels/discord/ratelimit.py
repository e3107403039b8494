"""Discord's rate limits, read from its headers: per-route buckets and the global limit.

Discord answers most REST calls with ``X-RateLimit-Bucket`` (an opaque id
shared by routes that share a limit), ``X-RateLimit-Remaining`` and
``X-RateLimit-Reset-After`` (float seconds). A route's bucket is per top-level
resource (the channel id of ``/channels/{id}/messages``), so the state is kept
per (bucket, major id). Before a request, :meth:`RateLimits.acquire` waits
while the bucket it last saw is empty; a 429 (:meth:`RateLimits.limited`)
empties the bucket for its ``retry_after``, or, when the body says
``"global": true``, pauses every request of this bot.

The clock and the sleep are injected, so tests never wait on the wall clock.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

__all__ = ["RateLimits", "RouteKey"]


@dataclass(frozen=True, slots=True)
class RouteKey:
    """A route as Discord limits it: method, path template, and its major id."""

    method: str
    template: str
    major: str = ""


@dataclass(slots=True)
class _Bucket:
    remaining: int
    reset_at: float


class RateLimits:
    """What this bot knows of its buckets; one per REST client."""

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._clock = clock
        self._sleep = sleep
        self._bucket_of: dict[tuple[str, str], str] = {}
        self._buckets: dict[tuple[str, str], _Bucket] = {}
        self._global_until = 0.0
        self._lock = asyncio.Lock()

    async def acquire(self, route: RouteKey) -> None:
        """Wait until ``route`` may be called, and count the call against its bucket."""
        while True:
            async with self._lock:
                now = self._clock()
                wait = self._global_until - now
                bucket = self._bucket(route)
                if wait <= 0 and bucket is not None:
                    if bucket.reset_at <= now:
                        bucket.remaining = max(bucket.remaining, 1)  # a new window
                    if bucket.remaining > 0:
                        bucket.remaining -= 1
                        return
                    wait = bucket.reset_at - now
                elif wait <= 0:
                    return
            await self._sleep(wait)

    def update(self, route: RouteKey, headers: Mapping[str, str]) -> None:
        """Remember what an answer's ``X-RateLimit-*`` headers say about ``route``'s bucket."""
        name = headers.get("X-RateLimit-Bucket")
        remaining = _number(headers.get("X-RateLimit-Remaining"))
        reset_after = _number(headers.get("X-RateLimit-Reset-After"))
        if not name or remaining is None or reset_after is None:
            return
        self._bucket_of[(route.method, route.template)] = name
        self._buckets[(name, route.major)] = _Bucket(
            remaining=int(remaining), reset_at=self._clock() + reset_after
        )

    def limited(self, route: RouteKey, retry_after: float, *, is_global: bool) -> None:
        """A 429: nothing more on ``route``'s bucket (or anywhere) for ``retry_after`` seconds."""
        until = self._clock() + retry_after
        if is_global:
            self._global_until = max(self._global_until, until)
            return
        name = self._bucket_of.get((route.method, route.template))
        key = (name or f"{route.method} {route.template}", route.major)
        if name is None:
            self._bucket_of[(route.method, route.template)] = key[0]
        self._buckets[key] = _Bucket(remaining=0, reset_at=until)

    def _bucket(self, route: RouteKey) -> _Bucket | None:
        name = self._bucket_of.get((route.method, route.template))
        return None if name is None else self._buckets.get((name, route.major))


def _number(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) and number >= 0 else None
