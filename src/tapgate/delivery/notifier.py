"""The seam between the outbox and a chat platform: the :class:`Notifier` protocol.

A notifier sends one request's message to one approver on one channel and
returns a :class:`Receipt` naming what it posted, updates what it posted when
the request is decided, and closes its clients. It raises
:class:`~tapgate.errors.DeliveryError` when it cannot deliver: ``retryable``
says whether the dispatcher should try again later (its long-horizon retry
survives restarts through the outbox's next-attempt time), and
:class:`~tapgate.errors.PermanentDeliveryError` says it never should.
Short retries (a 5xx, a rate limit) happen inside the notifier, through the
one retry policy of its platform (:mod:`tapgate.delivery.retry`).

``edits_messages`` is part of the protocol: a notifier whose platform cannot
edit sent messages sets it to ``False`` and the dispatcher then never asks it
to update them (no claim, no read: a decision costs LINE nothing).

A batch of calls is one card per approver (:class:`BatchNotifier`): every
built-in notifier sends it as one message; the dispatcher hands it the
batch's calls that approver decides, in the agent's order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from tapgate.gate.models import Delivery, Request

__all__ = ["Announcer", "BatchNotifier", "Notifier", "Receipt"]


@dataclass(frozen=True, kw_only=True, slots=True)
class Receipt:
    """What a notifier posted, so it can be found again.

    ``ref`` is the platform's own reference: Slack ``{"channel": "D…", "ts": "…"}``
    (the DM conversation id, which ``chat.update`` needs, not the user id),
    LINE ``{"message_id": "…"}``. It is stored as JSON in the outbox row.
    """

    channel: str
    address: str
    ref: Mapping[str, str] = field(default_factory=dict)


@runtime_checkable
class Notifier(Protocol):
    """Delivers approval messages on one channel (``slack``, ``line``, ``console``…)."""

    channel: str
    edits_messages: bool
    """Whether :meth:`update` can change a sent message (Slack: yes; LINE: no)."""

    async def send(
        self, request: Request, delivery: Delivery, *, key: str, retried: bool = False
    ) -> Receipt:
        """Post ``request`` to ``delivery.address``.

        ``key`` is unique per outbox row and stable across attempts: LINE sends
        it as ``X-Line-Retry-Key``; Slack tags the message with it so that a
        post whose response was lost can be found instead of posted twice.
        ``retried`` says an earlier attempt of this row may have reached the
        platform (it failed ambiguously, or the process died or stopped while
        sending): a notifier that cannot deduplicate by key must look first.
        """
        ...

    async def update(self, request: Request, receipt: Receipt) -> None:
        """Show the decided request in place of the buttons (a no-op where messages
        cannot be edited, as on LINE)."""
        ...

    async def close(self) -> None:
        """Release clients and sessions."""
        ...


@runtime_checkable
class BatchNotifier(Notifier, Protocol):
    """A :class:`Notifier` that can show a batch of calls as one card.

    ``requests`` are the batch's calls the approver decides, as they are now
    (some may be decided already: the card shows them as decided). A
    notifier without these methods cannot carry batch cards; the dispatcher
    then gives up on such a row for good rather than flood one message per call.
    """

    async def send_batch(
        self, requests: Sequence[Request], delivery: Delivery, *, key: str, retried: bool = False
    ) -> Receipt:
        """Post one card listing ``requests`` to ``delivery.address`` (``key`` as for send)."""
        ...

    async def update_batch(self, requests: Sequence[Request], receipt: Receipt) -> None:
        """Show ``requests`` as they are now on the posted card (a no-op where it cannot edit)."""
        ...


@runtime_checkable
class Announcer(Protocol):
    """A notifier that can also tell the operator something (the console).

    The server prints there that a request could reach no approver and was
    decided by its ``on_timeout`` verdict, so it never ends in silence.
    """

    def announce(self, text: str) -> None:
        """Write ``text`` where the operator reads requests."""
        ...
