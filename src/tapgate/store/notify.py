"""Cross-replica wake-ups: PostgreSQL ``LISTEN tapgate_decided``.

The database notifies ``tapgate_decided`` with the request id whenever a
request leaves ``pending`` (the audit trigger does it, so no code path can
forget; PostgreSQL delivers it when the deciding transaction commits). Each
replica keeps one connection listening and hands the ids to the gate, which
wakes its own waiters. A dropped connection is re-opened with capped
exponential backoff (1 s, 2 s, 4 s ... 10 s; back to 1 s once a connection
has held for 10 s), and after every (re)connect the gate reconciles all its waiters at
once, so a notification lost while disconnected costs a moment, never a
waiter. An outage is logged once as a warning, then every tenth failed
attempt, and its end once, rather than a line a second for its whole length.
SQLite has one process per file: nothing to listen to.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

__all__ = ["CHANNEL", "DecisionListener"]

log = logging.getLogger(__name__)

CHANNEL = "tapgate_decided"


class DecisionListener:
    """Keeps ``LISTEN tapgate_decided`` open and calls ``on_decided(request_id)``."""

    def __init__(
        self,
        engine: AsyncEngine,
        on_decided: Callable[[str], None],
        on_connected: Callable[[], Awaitable[Any]],
        *,
        retry: float = 1.0,
        max_retry: float = 10.0,
    ) -> None:
        self._engine = engine
        self._on_decided = on_decided
        self._on_connected = on_connected
        self._retry = retry
        self._max_retry = max_retry
        self._failures = 0  # attempts in a row that never got to LISTEN, or lost it at once
        self._since = 0.0  # when the current connection started listening
        self._task: asyncio.Task[None] | None = None
        self.connected = asyncio.Event()
        self.server_pid: int | None = None  # the listening backend (operators, tests)

    def start(self) -> None:
        """Start listening in an owned task (idempotent)."""
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="tapgate-listen")

    async def close(self) -> None:
        """Stop listening and give the connection back."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _run(self) -> None:
        while True:
            try:
                await self._listen_once()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # PostgreSQL restarted, network blip: listen again
                task = asyncio.current_task()
                if task is not None and task.cancelling():
                    raise  # a driver error raised while we are being stopped: stop
                if self.connected.is_set() and self._failures == 0:
                    log.warning("LISTEN %s lost (%s); reconnecting", CHANNEL, exc)
                elif self._failures % 10 == 0:
                    log.warning("LISTEN %s: not listening (%s); retrying", CHANNEL, exc)
                else:
                    log.debug("LISTEN %s: still not listening (%s)", CHANNEL, exc)
            # A connection that held a while starts the next round at ``retry``;
            # one lost at once (or whose catch-up keeps failing) counts as a failure.
            held = self.connected.is_set() and time.monotonic() - self._since >= self._max_retry
            self._failures = 0 if held else self._failures + 1
            self.connected.clear()
            await asyncio.sleep(self._delay())

    def _delay(self) -> float:
        """``retry`` after a held connection dropped; doubling, to ``max_retry``, while down."""
        doublings = min(max(self._failures - 1, 0), 30)  # 2.0 ** 1024 overflows: hours down
        return min(self._retry * 2.0**doublings, self._max_retry)

    async def _listen_once(self) -> None:
        lost = asyncio.Event()

        def notified(_conn: Any, _pid: int, _channel: str, payload: str) -> None:
            self._on_decided(payload)

        async with self._engine.connect() as conn:
            raw = (await conn.get_raw_connection()).driver_connection
            assert raw is not None
            raw.add_termination_listener(lambda _conn: lost.set())
            await raw.add_listener(CHANNEL, notified)
            self.server_pid = raw.get_server_pid()
            if self._failures:
                log.info("LISTEN %s restored after %d failed attempts", CHANNEL, self._failures)
            self._since = time.monotonic()
            self.connected.set()
            await self._on_connected()  # catch up on anything decided while not listening
            try:
                while not lost.is_set():
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(lost.wait(), 5.0)
                    if not lost.is_set():
                        await raw.execute("SELECT 1")  # notice a silently dead connection
            except Exception:
                lost.set()
                raise
            finally:
                if lost.is_set():
                    await conn.invalidate()  # a dead connection must not go back to the pool
                else:
                    with contextlib.suppress(Exception):
                        await raw.remove_listener(CHANNEL, notified)
