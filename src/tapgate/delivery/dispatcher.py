"""The outbox dispatcher: the owned background task that delivers approval messages.

It claims due outbox rows under a lease, sends each through the notifier of
its channel with bounded concurrency and per-destination pacing, and records
the outcome on the row: sent (with the platform's receipt), retry later (at a
time that survives restarts, :func:`~tapgate.delivery.retry.outbox_backoff`),
or failed for good. After a request is decided it brings every sent message
of that request up to date (Slack's buttons become "Approved by alice").

It wakes on gate events, on the earliest next-attempt time in the outbox,
and otherwise every ``idle`` seconds as a safety net; it never polls per
request. A new request asks for a full pass (claim, send, update); a decision
asks only for the update pass, and only when some notifier can edit a sent
message: with LINE alone a decision gives the dispatcher nothing to do, and a
burst of taps must not cost a claim transaction and two reads each
(docs/benchmarks.md).

A batch's card (an outbox item with ``members``) goes through the
notifier's :class:`~tapgate.delivery.notifier.BatchNotifier` methods
(the calls themselves are :mod:`tapgate.delivery.item_calls`): one
message per approver × channel, paced like any other, and after each wave
of its calls' decisions one update showing the batch as it then is.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping
from datetime import datetime, timedelta

from tapgate.delivery.item_calls import send_item, update_item
from tapgate.delivery.notifier import Notifier
from tapgate.delivery.retry import outbox_backoff
from tapgate.errors import DeliveryError
from tapgate.gate.bus import EventBus
from tapgate.gate.clock import Clock, SystemClock
from tapgate.gate.models import GateEvent
from tapgate.store import OutboxItem, Store

__all__ = ["Dispatcher"]

log = logging.getLogger(__name__)

_NEW_WORK = frozenset({"requested"})
_DECIDED = frozenset({"resolved", "expired", "cancelled"})


class Dispatcher:
    """Delivers the outbox through a set of notifiers, one per channel.

    ``pace`` maps a channel to the least number of seconds between two
    messages to one destination (Slack allows about one message per second
    per conversation). The dispatcher owns its notifiers and closes them.
    """

    def __init__(
        self,
        store: Store,
        notifiers: Iterable[Notifier],
        *,
        clock: Clock | None = None,
        bus: EventBus | None = None,
        concurrency: int = 8,
        lease: float = 60.0,
        batch: int = 50,
        idle: float = 5.0,
        pace: Mapping[str, float] | None = None,
        backoff: Callable[..., float] = outbox_backoff,
        owner: str | None = None,
        on_failure: Callable[[str, bool], None] | None = None,
        on_unreachable: Callable[[list[str]], Awaitable[object]] | None = None,
    ) -> None:
        self.store = store
        self.notifiers = {n.channel: n for n in notifiers}
        self.clock: Clock = clock or SystemClock()
        self.bus = bus
        self.lease = lease
        self.batch = batch
        self.idle = idle
        self.pace = dict(pace or {})
        self.backoff = backoff
        self.owner = owner or f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
        # Told (channel, permanent) for every failed send: the server's metrics.
        self.on_failure = on_failure
        # Told the requests whose last live message just failed for good: nobody can answer.
        self.on_unreachable = on_unreachable
        self._slots = asyncio.Semaphore(concurrency)
        self._wake = asyncio.Event()
        self._claim_wanted = True  # the first pass claims whatever is due
        self._edits = any(n.edits_messages for n in self.notifiers.values())
        self._next_send: dict[tuple[str, str], datetime] = {}
        self._pace_locks: dict[tuple[str, str], asyncio.Lock] = {}
        self._backlog: dict[tuple[str, str], int] = {}
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self._stop = asyncio.Event()  # set by close: a pacing wait ends at once
        self._unsubscribe: Callable[[], None] | None = None

    # -- lifecycle --------------------------------------------------------------------

    async def start(self) -> None:
        """Start the delivery loop (idempotent) and listen for gate events."""
        if self._task is not None:
            return
        if self.bus is not None:
            self._unsubscribe = self.bus.subscribe(self._on_event)
        self._task = asyncio.create_task(self._loop(), name="tapgate-dispatcher")

    async def close(self, grace: float = 10.0) -> None:
        """Stop taking work, give the pass in flight ``grace`` seconds, close the notifiers.

        A send cut off by the grace period is not lost: its row's lease runs
        out and the next dispatcher (or this one after a restart) retries it.
        """
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        if self._task is not None:
            self._stopping = True
            self._stop.set()
            self.wake()
            try:
                await asyncio.wait_for(asyncio.shield(self._task), grace)
            except TimeoutError:
                self._task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self._task
            self._task = None
        for notifier in self.notifiers.values():
            await notifier.close()

    async def __aenter__(self) -> Dispatcher:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def wake(self) -> None:
        """Run a full pass now: claim and send due rows, update decided messages."""
        self._claim_wanted = True
        self._wake.set()

    def _on_event(self, event: GateEvent) -> None:
        if event.kind in _NEW_WORK:
            self.wake()
        elif event.kind in _DECIDED and self._edits:
            self._wake.set()  # an update pass; a full one only if already due

    # -- work -------------------------------------------------------------------------

    async def run_once(self) -> int:
        """Deliver one batch of due rows and update one batch of decided messages."""
        items = await self.store.outbox.claim(
            self.clock.now(),
            owner=self.owner,
            lease=self.lease,
            limit=self.batch,
            channels=self.notifiers,
        )
        counts = await asyncio.gather(self._update_pass(), *(self._deliver(i) for i in items))
        return len(items) + (counts[0] or 0)

    async def _update_pass(self) -> int:
        """Bring decided messages up to date; the number updated (failures wait their turn)."""
        stale = await self.store.outbox.stale(
            channels=self.notifiers, now=self.clock.now(), limit=self.batch
        )
        done = await asyncio.gather(*(self._update(i) for i in stale))
        return sum(done)

    async def _loop(self) -> None:
        # ``until``: when the next full pass is due without any event (the
        # outbox's earliest retry, or the idle safety net); None: due now.
        until: datetime | None = None
        while not self._stopping:
            self._wake.clear()
            full = self._claim_wanted or until is None or self.clock.now() >= until
            self._claim_wanted = False
            try:
                worked = await (self.run_once() if full else self._update_pass())
                if worked or self._stopping:  # more may be waiting: look again, as deep
                    until = None if full else until
                    continue
                if full:
                    until = await self._next_pass()
                await self._sleep(until)
            except asyncio.CancelledError:
                raise
            except Exception:  # a bad moment (database restart) must not end delivery
                task = asyncio.current_task()
                if task is not None and task.cancelling():
                    raise  # a driver error raised while we are being stopped: stop
                log.exception("outbox dispatcher pass failed")
                until = None
                await self._sleep(self.clock.now() + timedelta(seconds=self.idle))

    async def _next_pass(self) -> datetime:
        """The earliest retry in the outbox, or ``idle`` seconds from now."""
        until = self.clock.now() + timedelta(seconds=self.idle)
        due = await self.store.outbox.next_due(self.notifiers)
        if due is not None:
            until = min(until, max(due, self.clock.now()))
        return until

    async def _sleep(self, until: datetime | None) -> None:
        if until is None:
            return
        waiters = [
            asyncio.ensure_future(self._wake.wait()),
            asyncio.ensure_future(self.clock.sleep_until(until)),
        ]
        try:
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters:
                waiter.cancel()

    async def _deliver(self, item: OutboxItem) -> None:
        notifier = self.notifiers[item.delivery.channel]
        interval = self.pace.get(notifier.channel)
        if not interval:
            await self._send(notifier, item)
            return
        await self._paced_send(notifier, item, interval)

    async def _paced_send(self, notifier: Notifier, item: OutboxItem, interval: float) -> None:
        """One destination's messages go out one at a time, ``interval`` seconds apart.

        The next message starts ``interval`` after the previous one *finished*,
        so the platform sees at most one message per interval per conversation
        whatever the network jitter. A row that would wait longer than half
        its lease is given back, due when its turn comes: a lease must never
        run out while a row waits (another replica could then send it too).
        A row still waiting when the dispatcher closes is given back the same
        way: the wait is on the dispatcher's clock, which need not move again.
        """
        key = (notifier.channel, item.delivery.address)
        backlog = self._backlog.get(key, 0)
        if backlog * interval > self.lease / 2:
            now = self.clock.now()
            at = now + timedelta(seconds=backlog * interval)
            await self.store.outbox.release(item.id, owner=self.owner, at=at, now=now)
            return
        self._backlog[key] = backlog + 1
        try:
            async with self._pace_locks.setdefault(key, asyncio.Lock()):
                due = self._next_send.get(key)
                if due is not None and not await self._wait_turn(due):
                    now = self.clock.now()
                    await self.store.outbox.release(item.id, owner=self.owner, at=due, now=now)
                    return
                await self._send(notifier, item)
                self._next_send[key] = self.clock.now() + timedelta(seconds=interval)
        finally:
            self._backlog[key] -= 1

    async def _wait_turn(self, due: datetime) -> bool:
        """Sleep until ``due``; False (at once) if the dispatcher is closing."""
        if due <= self.clock.now():
            return True
        if self._stop.is_set():
            return False
        turn = asyncio.ensure_future(self.clock.sleep_until(due))
        stop = asyncio.ensure_future(self._stop.wait())
        try:
            await asyncio.wait([turn, stop], return_when=asyncio.FIRST_COMPLETED)
        finally:
            turn.cancel()
            stop.cancel()
        return not self._stop.is_set()

    async def _send(self, notifier: Notifier, item: OutboxItem) -> None:
        try:
            async with self._slots:
                receipt = await send_item(notifier, item)
        except DeliveryError as exc:
            await self._failed(item, exc)
            return
        except Exception as exc:  # an unexpected notifier bug: retry later, loudly
            log.exception("notifier %s failed on outbox row %s", notifier.channel, item.id)
            await self._failed(item, DeliveryError(f"{type(exc).__name__}: {exc}"))
            return
        stored = {"channel": receipt.channel, "address": receipt.address, "ref": dict(receipt.ref)}
        if (
            await self.store.outbox.mark_sent(
                item.id,
                owner=self.owner,
                receipt=stored,
                now=self.clock.now(),
                editable=notifier.edits_messages,
                shown_version=item.version if item.batch_id is not None else None,
            )
            and self.bus is not None
        ):
            self.bus.publish(
                GateEvent(
                    kind="notified",
                    request=item.request,
                    at=self.clock.now(),
                    detail={"channel": item.delivery.channel, "approver": item.delivery.approver},
                )
            )

    async def _failed(self, item: OutboxItem, exc: DeliveryError) -> None:
        now = self.clock.now()
        error = str(exc) or type(exc).__name__
        if self.on_failure is not None:
            self.on_failure(item.delivery.channel, not exc.retryable)
        if not exc.retryable:
            log.error(
                "giving up on %s message to %s for request %s: %s",
                item.delivery.channel,
                item.delivery.approver,
                item.request.id,
                error,
            )
            await self.store.outbox.mark_failed(item.id, owner=self.owner, error=error, now=now)
            if self.on_unreachable is not None:
                stranded = await self.store.unreachable_after(item.id)
                if stranded:
                    await self.on_unreachable(stranded)
            return
        delay = self.backoff(item.attempts, retry_after=exc.retry_after)
        log.warning(
            "%s message to %s failed (attempt %d), retrying in %.0fs: %s",
            item.delivery.channel,
            item.delivery.approver,
            item.attempts,
            delay,
            error,
        )
        await self.store.outbox.mark_retry(
            item.id, owner=self.owner, error=error, now=now, at=now + timedelta(seconds=delay)
        )

    async def _update(self, item: OutboxItem) -> bool:
        """Show the decision on one sent message; a failure is tried again after a backoff."""
        notifier = self.notifiers[item.delivery.channel]
        try:
            async with self._slots:
                await update_item(notifier, item)
        except DeliveryError as exc:
            log.warning(
                "could not update %s message of request %s: %s",
                notifier.channel,
                item.request.id,
                exc,
            )
            await self._update_failed(item, exc)
            return False
        except Exception as exc:  # an unexpected notifier bug: counted like a failure, loudly
            log.exception("notifier %s failed to update outbox row %s", notifier.channel, item.id)
            await self._update_failed(item, DeliveryError(f"{type(exc).__name__}: {exc}"))
            return False
        now = self.clock.now()
        if item.batch_id is not None:
            done = not any(r.is_pending for r in item.members)
            await self.store.outbox.mark_card_shown(
                item.id, version=item.version, done=done, now=now
            )
        else:
            await self.store.outbox.mark_updated(item.id, status=item.request.status, now=now)
        return True

    async def _update_failed(self, item: OutboxItem, exc: DeliveryError) -> None:
        now = self.clock.now()
        delay = self.backoff(item.update_attempts + 1, retry_after=exc.retry_after)
        await self.store.outbox.mark_update_failed(
            item.id,
            error=str(exc) or type(exc).__name__,
            now=now,
            retry_at=now + timedelta(seconds=delay),
        )
