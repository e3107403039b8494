"""tapgate.notifiers: outbound approval messages, delivered durably.

The :class:`Notifier` protocol is the seam; :class:`SlackNotifier`,
:class:`LineNotifier` and :class:`ConsoleNotifier` deliver through it, and
:class:`RecordingNotifier` is the fake for tests and dry runs. The
:class:`Dispatcher` drives them from the outbox. Messages are built from one
presentation model (masked, truncated) and rendered per platform.

:class:`LineNotifier` and :class:`SlackNotifier` load on first use (PEP 562):
their SDKs are most of a server's memory (line-bot-sdk alone ~40 MB), and a
deployment pays only for the platforms its config enables.
"""

from typing import TYPE_CHECKING

from tapgate._lazy import lazy_exports
from tapgate.core.masking import mask_arguments, mask_text
from tapgate.notifiers.base import Notifier, Receipt
from tapgate.notifiers.console import ConsoleNotifier
from tapgate.notifiers.dispatcher import Dispatcher
from tapgate.notifiers.line_flex import render_line
from tapgate.notifiers.presentation import ApprovalView, present
from tapgate.notifiers.recording import RecordingNotifier
from tapgate.notifiers.retry import RetryPolicy, outbox_backoff
from tapgate.notifiers.slack_blocks import render_slack, render_slack_resolved

if TYPE_CHECKING:
    from tapgate.notifiers.line import LineNotifier
    from tapgate.notifiers.slack import SlackNotifier

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

_LAZY = {"LineNotifier": "tapgate.notifiers.line", "SlackNotifier": "tapgate.notifiers.slack"}


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
