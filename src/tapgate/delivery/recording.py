"""A notifier that delivers nothing and remembers everything: for tests and dry runs.

Shipped in the package, not in ``tests/``, so that users testing their own
agent integration (and ``tapgate`` dry runs) get the same fake tapgate's own
tests use, in the spirit of ``structlog.testing``. It can be scripted to fail
(:meth:`RecordingNotifier.fail_next`), held mid-send, and awaited
(:meth:`RecordingNotifier.wait_for_sends`) so tests never sleep.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tapgate.delivery.notifier import Receipt
from tapgate.gate.models import Delivery, Request

__all__ = ["RecordedCall", "RecordedSend", "RecordedUpdate", "RecordingNotifier"]

_DEFAULT_WAIT = 5.0


@dataclass(frozen=True, kw_only=True, slots=True)
class RecordedCall:
    """One ``send`` call, successful or not (``error`` is what it raised)."""

    request: Request
    delivery: Delivery
    key: str
    error: BaseException | None = None
    retried: bool = False


@dataclass(frozen=True, kw_only=True, slots=True)
class RecordedSend:
    """One successful ``send`` and the receipt it returned."""

    request: Request
    delivery: Delivery
    key: str
    receipt: Receipt
    members: tuple[Request, ...] = ()
    """A batch card's calls (``request`` is the first); empty for a single request."""


@dataclass(frozen=True, kw_only=True, slots=True)
class RecordedUpdate:
    """One successful ``update``."""

    request: Request
    receipt: Receipt
    members: tuple[Request, ...] = ()


class RecordingNotifier:
    """Records sends and updates instead of delivering them.

    ``calls`` holds every send attempt, ``sends`` the successful ones (each
    receipt's ``ref`` is ``{"id": "<n>"}``, numbered from 1), ``updates`` the
    successful updates. Scripted errors are raised by the next calls, in order.
    """

    def __init__(self, channel: str = "recording", *, edits_messages: bool = True) -> None:
        self.channel = channel
        self.edits_messages = edits_messages
        self.calls: list[RecordedCall] = []
        self.sends: list[RecordedSend] = []
        self.updates: list[RecordedUpdate] = []
        self.closed = False
        self._sequence = 0
        self._send_errors: deque[BaseException] = deque()
        self._update_errors: deque[BaseException] = deque()
        self._changed = asyncio.Condition()
        self._open = asyncio.Event()
        self._open.set()

    def fail_next(self, *errors: BaseException) -> None:
        """Make the next ``len(errors)`` sends raise these errors, one each."""
        self._send_errors.extend(errors)

    def fail_next_update(self, *errors: BaseException) -> None:
        """Make the next ``len(errors)`` updates raise these errors, one each."""
        self._update_errors.extend(errors)

    def hold(self) -> None:
        """Make sends wait (after being recorded in ``calls``) until :meth:`release`."""
        self._open.clear()

    def release(self) -> None:
        """Let held and later sends complete."""
        self._open.set()

    async def send(
        self, request: Request, delivery: Delivery, *, key: str, retried: bool = False
    ) -> Receipt:
        """Record the call; raise the next scripted error or return a numbered receipt."""
        error = self._send_errors.popleft() if self._send_errors else None
        await self._record(
            lambda: self.calls.append(_call(request, delivery, key, error, retried=retried))
        )
        await self._open.wait()
        if error is not None:
            raise error
        self._sequence += 1
        receipt = Receipt(
            channel=self.channel, address=delivery.address, ref={"id": str(self._sequence)}
        )
        sent = RecordedSend(request=request, delivery=delivery, key=key, receipt=receipt)
        await self._record(lambda: self.sends.append(sent))
        return receipt

    async def send_batch(
        self, requests: Sequence[Request], delivery: Delivery, *, key: str, retried: bool = False
    ) -> Receipt:
        """Record a batch card like a send of its first call, with every call in ``members``."""
        receipt = await self.send(requests[0], delivery, key=key, retried=retried)
        async with self._changed:
            n = next(i for i, sent in enumerate(self.sends) if sent.receipt is receipt)
            self.sends[n] = dataclasses.replace(self.sends[n], members=tuple(requests))
        return receipt

    async def update_batch(self, requests: Sequence[Request], receipt: Receipt) -> None:
        """Record a batch card's update (``members``: every call as it now is)."""
        await self.update(requests[0], receipt)
        async with self._changed:
            n = max(i for i, done in enumerate(self.updates) if done.receipt is receipt)
            self.updates[n] = dataclasses.replace(self.updates[n], members=tuple(requests))

    async def update(self, request: Request, receipt: Receipt) -> None:
        """Record the update, or raise the next scripted update error."""
        if self._update_errors:
            raise self._update_errors.popleft()
        update = RecordedUpdate(request=request, receipt=receipt)
        await self._record(lambda: self.updates.append(update))

    async def close(self) -> None:
        """Mark the notifier closed (tests assert that the owner closed it)."""
        self.closed = True

    async def wait_for_sends(self, count: int, *, timeout: float = _DEFAULT_WAIT) -> None:
        """Return once at least ``count`` sends succeeded; ``TimeoutError`` after ``timeout``."""
        await self._wait_until(lambda: len(self.sends) >= count, timeout)

    async def wait_for_calls(self, count: int, *, timeout: float = _DEFAULT_WAIT) -> None:
        """Return once at least ``count`` sends were attempted, failed ones included."""
        await self._wait_until(lambda: len(self.calls) >= count, timeout)

    async def wait_for_updates(self, count: int, *, timeout: float = _DEFAULT_WAIT) -> None:
        """Return once at least ``count`` updates succeeded."""
        await self._wait_until(lambda: len(self.updates) >= count, timeout)

    async def _wait_until(self, predicate: Callable[[], bool], timeout: float) -> None:
        async with asyncio.timeout(timeout), self._changed:
            await self._changed.wait_for(predicate)

    async def _record(self, change: Callable[[], None]) -> None:
        async with self._changed:
            change()
            self._changed.notify_all()


def _call(
    request: Request,
    delivery: Delivery,
    key: str,
    error: BaseException | None,
    *,
    retried: bool = False,
) -> RecordedCall:
    return RecordedCall(request=request, delivery=delivery, key=key, error=error, retried=retried)
