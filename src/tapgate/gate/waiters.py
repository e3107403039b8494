"""Parked waiters: the futures agents wait on, and who wakes them.

The gate's public story (submit, wait, resolve) is in :mod:`tapgate.gate.gate`;
this module owns the machinery under ``wait``: one future per waiter keyed by
request id, a clock timer for its deadline, and three ways to be woken:

- the code path that decided the request in this process (:meth:`Waiters.wake`);
- a decision made by another replica (:meth:`Waiters.on_remote_decision`,
  fed by PostgreSQL ``LISTEN``), which reads the request back from the store;
- the gate's slow reconciliation sweep, which asks the store about every id
  in :meth:`Waiters.ids` (the safety net).

A waiter that read its request just before a decision and parks just after
must still wake: recent decisions are remembered (:meth:`Waiters.catch_up`).
A parked waiter is a future plus a timer, no task of its own, so 10,000
long-polls stay cheap (a benchmark target).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict, defaultdict
from collections.abc import Awaitable, Callable
from datetime import datetime
from functools import partial

from tapgate.gate.clock import Clock
from tapgate.gate.models import Request

__all__ = ["Waiters"]

log = logging.getLogger(__name__)

_REMEMBERED_DECISIONS = 1024
"""Recent decisions kept for waiters that park a moment after them (see ``catch_up``)."""

Parked = tuple["asyncio.Future[Request | None]", Callable[[], None]]


class Waiters:
    """Futures parked per request id, woken by a decision or their deadline.

    ``read`` fetches a request from the store: used only when another
    process decided it and this one has someone waiting. ``read_many``
    fetches those of several that are no longer pending, for the
    reconciliation sweep.
    """

    def __init__(
        self,
        clock: Clock,
        read: Callable[[str], Awaitable[Request]],
        read_many: Callable[[list[str]], Awaitable[list[Request]]],
    ) -> None:
        self._clock = clock
        self._read = read
        self._read_many = read_many
        self._sweeper: asyncio.Task[None] | None = None
        # A list per id, not a set: one waiter per request is the rule, and an
        # empty set costs ~150 bytes more than a list (10,000 parked polls).
        self._futures: defaultdict[str, list[asyncio.Future[Request | None]]] = defaultdict(list)
        # None: decided by another replica, to be read from the store.
        self._decided: OrderedDict[str, Request | None] = OrderedDict()
        self._lookups: set[asyncio.Task[None]] = set()
        self.released = False

    @property
    def count(self) -> int:
        """How many waiters are parked."""
        return sum(len(futures) for futures in self._futures.values())

    def count_for(self, request_id: str) -> int:
        """How many waiters are parked on ``request_id``."""
        return len(self._futures.get(request_id, ()))

    def ids(self) -> list[str]:
        """The request ids someone waits on (what the reconciliation sweep reads)."""
        return list(self._futures)

    def park(self, request_id: str, deadline: datetime) -> Parked:
        """Register a waiter: a future that gets the decided request, or ``None`` at ``deadline``.

        Not a coroutine: the caller awaits the future itself, so a parked
        long-poll holds no extra frame. The caller must :meth:`unpark` it,
        whatever happens.
        """
        future: asyncio.Future[Request | None] = asyncio.get_running_loop().create_future()
        self._futures[request_id].append(future)
        # A partial, not a closure: ~100 bytes less for each of 10,000 parked polls.
        return future, self._clock.call_at(deadline, partial(_time_out, future))

    def unpark(self, request_id: str, parked: Parked) -> None:
        """Forget a waiter and its timer (after it woke, or was cancelled)."""
        future, cancel = parked
        cancel()
        futures = self._futures.get(request_id)
        if futures is not None:
            with contextlib.suppress(ValueError):
                futures.remove(future)
            if not futures:
                del self._futures[request_id]

    def wake(self, request: Request) -> int:
        """Hand ``request`` to everyone waiting on it; returns how many woke."""
        if not request.is_pending:
            self._remember(request.id, request)
        futures = self._futures.pop(request.id, [])
        for future in futures:
            if not future.done():
                future.set_result(request)
        return len(futures)

    def catch_up(self, request_id: str) -> None:
        """Wake the waiter just parked for ``request_id`` if its decision already came."""
        if request_id not in self._decided:
            return
        decided = self._decided[request_id]
        if decided is not None:
            self.wake(decided)
        else:
            self.on_remote_decision(request_id)

    def on_remote_decision(self, request_id: str) -> None:
        """A replica decided ``request_id``: wake our waiters for it, if we have any."""
        if self._decided.get(request_id) is None:
            self._remember(request_id, None)
        if request_id not in self._futures:
            return
        lookup = asyncio.create_task(self._wake_from_store(request_id))
        self._lookups.add(lookup)
        lookup.add_done_callback(self._lookups.discard)

    def release(self) -> None:
        """Send every waiter home with ``None`` (server shutdown); later waits return at once."""
        self.released = True
        for futures in list(self._futures.values()):
            for future in list(futures):
                if not future.done():
                    future.set_result(None)

    async def reconcile(self) -> int:
        """Wake waiters whose request was decided elsewhere (one query); returns how many woke."""
        woken = 0
        for request in await self._read_many(self.ids()):
            if not request.is_pending:
                woken += self.wake(request)
        return woken

    def start_sweep(self, interval: float) -> None:
        """Run :meth:`reconcile` every ``interval`` seconds of the clock (idempotent)."""
        if self._sweeper is None:
            self._sweeper = asyncio.create_task(self._sweep(interval), name="tapgate-reconcile")

    async def close(self) -> None:
        """Stop the sweep and cancel the store reads still in flight."""
        lookups = list(self._lookups)
        for lookup in lookups:
            lookup.cancel()
        await asyncio.gather(*lookups, return_exceptions=True)
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeper
            self._sweeper = None

    async def _sweep(self, interval: float) -> None:
        while True:
            await self._clock.sleep(interval)
            try:
                await self.reconcile()
            except Exception:  # the sweep is a safety net; it must outlive a bad moment
                if _cancelling():
                    raise  # a driver error raised while we are being stopped: stop
                log.exception("reconciliation sweep failed")

    def _remember(self, request_id: str, request: Request | None) -> None:
        self._decided[request_id] = request
        self._decided.move_to_end(request_id)
        while len(self._decided) > _REMEMBERED_DECISIONS:
            self._decided.popitem(last=False)

    async def _wake_from_store(self, request_id: str) -> None:
        try:
            request = await self._read(request_id)
        except Exception:  # the sweep will catch up
            log.exception("could not read request %s after a remote decision", request_id)
            return
        if not request.is_pending:
            self.wake(request)


def _time_out(future: asyncio.Future[Request | None]) -> None:
    if not future.done():
        future.set_result(None)


def _cancelling() -> bool:
    """True when the current task is being cancelled (a close() is waiting for it)."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0
