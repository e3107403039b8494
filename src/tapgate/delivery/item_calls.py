"""One outbox item on the wire: what sending or updating it asks of its channel's notifier.

The dispatcher (:mod:`tapgate.delivery.dispatcher`) decides *when* an item
goes (leases, pacing, retries) and records what came of it; this module is
the call itself: a request's message or a batch's card, and the receipt as
stored on the row turned back into the one the notifier gave.
"""

from __future__ import annotations

from tapgate.delivery.notifier import BatchNotifier, Notifier, Receipt
from tapgate.errors import PermanentDeliveryError
from tapgate.store import OutboxItem

__all__ = ["send_item", "stored_receipt", "update_item"]


async def send_item(notifier: Notifier, item: OutboxItem) -> Receipt:
    """One attempt at an item: a request's message, or a batch's card."""
    # The claim counted this attempt: more than one means an earlier
    # one failed, died or was stopped, and may have been delivered.
    retried = item.attempts > 1
    if item.batch_id is None:
        return await notifier.send(item.request, item.delivery, key=item.retry_key, retried=retried)
    return await _batch_notifier(notifier).send_batch(
        item.members, item.delivery, key=item.retry_key, retried=retried
    )


async def update_item(notifier: Notifier, item: OutboxItem) -> None:
    """Show the decision (a batch: its calls as they are now) on the message sent for ``item``."""
    receipt = stored_receipt(item)
    if item.batch_id is not None:
        await _batch_notifier(notifier).update_batch(item.members, receipt)
    else:
        await notifier.update(item.request, receipt)


def stored_receipt(item: OutboxItem) -> Receipt:
    """The receipt recorded when ``item`` was sent (its channel and address if it lacks them)."""
    ref = item.receipt or {}
    return Receipt(
        channel=str(ref.get("channel", item.delivery.channel)),
        address=str(ref.get("address", item.delivery.address)),
        ref={k: str(v) for k, v in dict(ref.get("ref", {})).items()},
    )


def _batch_notifier(notifier: Notifier) -> BatchNotifier:
    """``notifier`` as one that can show a batch card; a permanent failure if it cannot."""
    if not isinstance(notifier, BatchNotifier):
        raise PermanentDeliveryError(f"the {notifier.channel} notifier cannot send batch cards")
    return notifier
