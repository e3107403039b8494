"""tapgate.notifiers: outbound approval messages, delivered durably.

The :class:`Notifier` protocol is the seam; :class:`SlackNotifier`,
:class:`LineNotifier` and :class:`ConsoleNotifier` deliver through it, and
:class:`RecordingNotifier` is the fake for tests and dry runs. The
:class:`Dispatcher` drives them from the outbox. Messages are built from one
presentation model (masked, truncated) and rendered per platform.
"""

from tapgate.notifiers.base import Notifier, Receipt
from tapgate.notifiers.console import ConsoleNotifier
from tapgate.notifiers.dispatcher import Dispatcher
from tapgate.notifiers.line import LineNotifier
from tapgate.notifiers.line_flex import render_line
from tapgate.notifiers.masking import mask_arguments, mask_text
from tapgate.notifiers.presentation import ApprovalView, present
from tapgate.notifiers.recording import RecordingNotifier
from tapgate.notifiers.retry import RetryPolicy, outbox_backoff
from tapgate.notifiers.slack import SlackNotifier
from tapgate.notifiers.slack_blocks import render_slack, render_slack_resolved

__all__ = [
    "ApprovalView",
    "ConsoleNotifier",
    "Dispatcher",
    "LineNotifier",
    "Notifier",
    "Receipt",
    "RecordingNotifier",
    "RetryPolicy",
    "SlackNotifier",
    "mask_arguments",
    "mask_text",
    "outbox_backoff",
    "present",
    "render_line",
    "render_slack",
    "render_slack_resolved",
]
