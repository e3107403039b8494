"""A batch card's "Deny all" on Slack: a reason first, as a single Deny asks for one.

What the tap means is :mod:`tapgate.decisions.taps` (``check_batch_tap`` before
the dialog, ``tap_batch`` after it, through ``SlackTaps.decide``); this
module only opens the dialog or says why not:

    Deny all ─► check_batch_tap ─► views.open (reason modal) | ephemeral
    modal submitted ─► ack ─► tap_batch(deny_all, reason) ─► ephemeral summary
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from tapgate.channels.slack.payloads import BatchInteraction
from tapgate.channels.slack.replies import SlackReplies
from tapgate.decisions.taps import check_batch_tap
from tapgate.gate.gate import Gate

__all__ = ["DENY_ALL_MODAL_FAILED", "SlackBatchTaps"]

DENY_ALL_MODAL_FAILED = "tapgate could not open the deny dialog; please tap Deny all again."


class SlackBatchTaps:
    """The "Deny all" dialog for :class:`~tapgate.channels.slack.webhook.SlackWebhook`.

    ``same_workspace`` is the webhook's own check (it refuses, audits and tells).
    """

    def __init__(
        self,
        gate: Gate,
        replies: SlackReplies,
        same_workspace: Callable[[BatchInteraction], Awaitable[bool]],
    ) -> None:
        self._gate = gate
        self._replies = replies
        self._same_workspace = same_workspace

    async def ask_reason(self, interaction: BatchInteraction) -> None:
        """Open the "Deny all" reason modal, but only if the tapper may deny an open call."""
        if not await self._same_workspace(interaction):
            return
        may = await check_batch_tap(self._gate, interaction.tap)
        if may.kind != "ready":
            await self._replies.tell(interaction, may.message)
            return
        if not await self._replies.open_deny_all_modal(interaction, len(may.requests)):
            await self._replies.tell(interaction, DENY_ALL_MODAL_FAILED)
