"""tapgate.delivery: approval messages delivered durably, on whatever channels are enabled.

The :class:`Notifier` protocol is the seam a channel implements; the
:class:`Dispatcher` drives notifiers from the store's outbox (leases, retries,
pacing); every card is drawn from one presentation model (:func:`present`,
masked and cut) that each channel renders for its platform;
:class:`RecordingNotifier` is the fake for tests and dry runs.

Imports no chat SDK and no channel (a test enforces it).
"""

from tapgate.delivery.dispatcher import Dispatcher
from tapgate.delivery.notifier import BatchNotifier, Notifier, Receipt
from tapgate.delivery.presentation import ApprovalView, present
from tapgate.delivery.recording import RecordingNotifier
from tapgate.delivery.retry import RetryPolicy, outbox_backoff

__all__ = [
    "ApprovalView",
    "BatchNotifier",
    "Dispatcher",
    "Notifier",
    "Receipt",
    "RecordingNotifier",
    "RetryPolicy",
    "outbox_backoff",
    "present",
]
