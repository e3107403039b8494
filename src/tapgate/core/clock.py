"""Time, injected.

Expiry, signature windows and retry sleeps all ask a :class:`Clock`, so tests
move time forward with :class:`ManualClock` instead of waiting on the wall.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from datetime import UTC, datetime, timedelta
from typing import Protocol

__all__ = ["Clock", "ManualClock", "SystemClock"]


class Clock(Protocol):
    """The source of "now" and of sleeping, for everything time-dependent."""

    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Sleep ``seconds`` of this clock's time."""
        ...

    async def sleep_until(self, when: datetime) -> None:
        """Sleep until this clock reads ``when`` (at once if it already has).

        An absolute deadline cannot drift when the sleeping task starts late.
        """
        ...


class SystemClock:
    """The real clock."""

    def now(self) -> datetime:
        """The wall-clock time in UTC."""
        return datetime.now(UTC)

    async def sleep(self, seconds: float) -> None:
        """``asyncio.sleep``."""
        await asyncio.sleep(max(0.0, seconds))

    async def sleep_until(self, when: datetime) -> None:
        """Sleep until the wall clock reaches ``when``."""
        await asyncio.sleep(max(0.0, (when - self.now()).total_seconds()))


class ManualClock:
    """A clock that moves only when told to; sleepers wake when it passes their deadline."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 1, 1, tzinfo=UTC)
        self._sleepers: list[tuple[datetime, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()

    def now(self) -> datetime:
        """The clock's current time."""
        return self._now

    async def sleep(self, seconds: float) -> None:
        """Wait until :meth:`advance` moves the clock ``seconds`` ahead."""
        await self.sleep_until(self._now + timedelta(seconds=max(0.0, seconds)))

    async def sleep_until(self, when: datetime) -> None:
        """Wait until :meth:`advance` moves the clock to ``when``; at once if it is there."""
        if when <= self._now:
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (when, next(self._seq), future))
        await future

    def advance(self, seconds: float) -> None:
        """Move time forward and wake every sleeper whose deadline has come."""
        self._now += timedelta(seconds=seconds)
        while self._sleepers and self._sleepers[0][0] <= self._now:
            _, _, future = heapq.heappop(self._sleepers)
            if not future.done():
                future.set_result(None)

    @property
    def sleepers(self) -> int:
        """How many sleeps are waiting (for tests that need to know a task is parked)."""
        return sum(1 for _, _, f in self._sleepers if not f.done())
