"""The in-process event bus: requested, notified, resolved, expired, cancelled, and at once.

Request events (:class:`~tapgate.gate.models.GateEvent`) go to listeners and
bounded queues; decisions made without a request (policy or a grant:
:class:`~tapgate.gate.models.DecidedAtOnce`) go to their own listeners, so a
consumer of request events never has to handle a record without a request.

The gate publishes; the server's SSE stream, the notifiers' update step and
tests subscribe. Publishing never blocks or breaks the gate (it publishes
after its transaction committed): a listener or filter that raises is logged
and skipped, and a subscriber that falls
behind loses its oldest events (counted in ``dropped``, on the bus and on the
subscription) rather than slowing every agent down.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from tapgate.gate.models import DecidedAtOnce, GateEvent

__all__ = ["EventBus", "Subscription"]

Listener = Callable[[GateEvent], None]
AtOnceListener = Callable[[DecidedAtOnce], None]

log = logging.getLogger(__name__)


class Subscription:
    """One bounded queue on the bus, with the filter applied before queueing.

    Filtering at the door matters: a queue shared with other agents' events
    would lose this subscriber's own to a burst of theirs (one heartbeat can
    expire hundreds of requests at once). ``dropped`` counts what was lost
    anyway, so the consumer can tell its view has a gap.
    """

    def __init__(self, maxsize: int, accept: Callable[[GateEvent], bool] | None) -> None:
        self.queue: asyncio.Queue[GateEvent] = asyncio.Queue(maxsize)
        self.accept = accept
        self.dropped = 0

    def offer(self, event: GateEvent) -> bool:
        """Queue ``event`` if accepted, dropping the oldest when full; True if one was dropped."""
        try:
            if self.accept is not None and not self.accept(event):
                return False
        except Exception:  # a broken filter loses its own events, never the gate's
            log.exception("event filter failed; event %s not queued", event.kind)
            return False
        lost = False
        if self.queue.full():
            with contextlib.suppress(asyncio.QueueEmpty):
                self.queue.get_nowait()
            self.dropped += 1
            lost = True
        self.queue.put_nowait(event)
        return lost


class EventBus:
    """Fan-out of :class:`~tapgate.gate.models.GateEvent` to listeners and queues."""

    def __init__(self) -> None:
        self._listeners: list[Listener] = []
        self._at_once: list[AtOnceListener] = []
        self._subscriptions: list[Subscription] = []
        self.dropped = 0

    @property
    def open_streams(self) -> int:
        """How many :meth:`stream` queues are open (an SSE client each, in the server)."""
        return len(self._subscriptions)

    def publish(self, event: GateEvent) -> None:
        """Deliver ``event`` to every listener and queue, now, without awaiting."""
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception:  # the gate publishes after committing: a listener cannot undo it
                log.exception("event listener %r failed on %s", listener, event.kind)
        for subscription in list(self._subscriptions):
            self.dropped += subscription.offer(event)

    def publish_at_once(self, event: DecidedAtOnce) -> None:
        """Deliver a decision made without a request to every at-once listener."""
        for listener in list(self._at_once):
            try:
                listener(event)
            except Exception:  # the decision is made: a listener cannot undo it
                log.exception("at-once listener %r failed", listener)

    def subscribe_at_once(self, listener: AtOnceListener) -> Callable[[], None]:
        """Call ``listener`` for every decision made without a request; returns the unsubscribe."""
        self._at_once.append(listener)
        return lambda: self._at_once.remove(listener)

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener`` for every event; returns the function that unsubscribes."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    @asynccontextmanager
    async def stream(
        self, maxsize: int = 1000, accept: Callable[[GateEvent], bool] | None = None
    ) -> AsyncIterator[Subscription]:
        """A bounded queue of the events ``accept`` lets in, for the ``async with`` block."""
        subscription = Subscription(maxsize, accept)
        self._subscriptions.append(subscription)
        try:
            yield subscription
        finally:
            self._subscriptions.remove(subscription)
