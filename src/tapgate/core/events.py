"""The in-process event bus: requested, notified, resolved, expired, cancelled.

The gate publishes; the server's SSE stream, the notifiers' update step and
tests subscribe. Publishing never blocks the gate: a subscriber that falls
behind loses its oldest events (counted in ``dropped``) rather than slowing
every agent down.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from tapgate.core.models import GateEvent

__all__ = ["EventBus"]

Listener = Callable[[GateEvent], None]


class EventBus:
    """Fan-out of :class:`~tapgate.core.models.GateEvent` to listeners and queues."""

    def __init__(self) -> None:
        self._listeners: list[Listener] = []
        self._queues: list[asyncio.Queue[GateEvent]] = []
        self.dropped = 0

    def publish(self, event: GateEvent) -> None:
        """Deliver ``event`` to every listener and queue, now, without awaiting."""
        for listener in list(self._listeners):
            listener(event)
        for queue in list(self._queues):
            if queue.full():
                with contextlib.suppress(asyncio.QueueEmpty):
                    queue.get_nowait()
                self.dropped += 1
            queue.put_nowait(event)

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener`` for every event; returns the function that unsubscribes."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    @asynccontextmanager
    async def stream(self, maxsize: int = 1000) -> AsyncIterator[asyncio.Queue[GateEvent]]:
        """A bounded queue of events for the duration of the ``async with`` block."""
        queue: asyncio.Queue[GateEvent] = asyncio.Queue(maxsize)
        self._queues.append(queue)
        try:
            yield queue
        finally:
            self._queues.remove(queue)
