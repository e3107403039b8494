"""Time, injected.

Expiry, signature windows and retry sleeps all ask a :class:`Clock`, so tests
move time forward with :class:`ManualClock` instead of waiting on the wall.
Besides sleeping, a clock can *schedule* a callback: a parked waiter then costs
a timer entry rather than a sleeping task, which matters with 10,000 of them.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Protocol

__all__ = ["Cancel", "Clock", "ManualClock", "SystemClock"]

Cancel = Callable[[], None]
"""Cancels a scheduled callback (a no-op once it has run)."""


class Clock(Protocol):
    """The source of "now", of sleeping and of timers, for everything time-dependent."""

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

    def call_at(self, when: datetime, callback: Callable[[], None]) -> Cancel:
        """Run ``callback`` on the running loop once this clock reads ``when``."""
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

    def call_at(self, when: datetime, callback: Callable[[], None]) -> Cancel:
        """A loop timer; the delay is taken from the wall clock now."""
        delay = max(0.0, (when - self.now()).total_seconds())
        return asyncio.get_running_loop().call_later(delay, callback).cancel


class ManualClock:
    """A clock that moves only when told to; timers fire when it passes their time."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 1, 1, tzinfo=UTC)
        self._timers: list[tuple[datetime, int, Callable[[], None]]] = []
        self._cancelled: set[int] = set()
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

        def wake() -> None:
            if not future.done():
                future.set_result(None)

        cancel = self.call_at(when, wake)
        try:
            await future
        finally:
            cancel()

    def call_at(self, when: datetime, callback: Callable[[], None]) -> Cancel:
        """Queue ``callback`` for when :meth:`advance` reaches ``when`` (now, if it has)."""
        seq = next(self._seq)
        if when <= self._now:
            asyncio.get_running_loop().call_soon(callback)
            return lambda: None
        heapq.heappush(self._timers, (when, seq, callback))
        return lambda: self._cancelled.add(seq)

    def advance(self, seconds: float) -> None:
        """Move time forward and fire every timer whose time has come, in order."""
        self._now += timedelta(seconds=seconds)
        while self._timers and self._timers[0][0] <= self._now:
            _, seq, callback = heapq.heappop(self._timers)
            if seq in self._cancelled:
                self._cancelled.discard(seq)
                continue
            callback()

    @property
    def sleepers(self) -> int:
        """How many timers are waiting (for tests that need to know a task is parked)."""
        return sum(1 for _, seq, _ in self._timers if seq not in self._cancelled)
