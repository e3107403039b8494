"""A Slack tap's work after the ack: decided, or its dialog opened, or refused and told.

:class:`~tapgate.channels.slack.webhook.SlackWebhook` routes a payload and owns the
task this runs in; what a tap *means* is :mod:`tapgate.decisions.taps`. This
module is the part between, which speaks Slack::

    stored tap ─inbox.before_apply─► Revoke? ─► ``_slack_grants`` (core.own_grants)
    ─► workspace? ──core.taps.tap / tap_batch / core.edits.approve_edit──►
        applied: nothing to say (the outbox rewrites the message) | ephemeral
    Deny / Reply ─► workspace? ──core.taps.check──► views.open (reason / answer modal)
        | ephemeral
    any of it failed (the store, Slack) ─► logged, and the tapper told to tap again

A tap from another workspace is refused here (audited by core, told once per
event), for every dialog too: "Deny all" (``_slack_batches``) and "Edit…"
(``_slack_edits``) are reached through :class:`SlackTaps`.
Logged under the webhook's own logger name, as before this module existed.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from tapgate.channels.slack.batches import SlackBatchTaps
from tapgate.channels.slack.edits import SlackEdits
from tapgate.channels.slack.grants import SlackGrantTaps
from tapgate.channels.slack.payloads import BatchInteraction, Interaction, RevokeInteraction
from tapgate.channels.slack.replies import SlackReplies
from tapgate.channels.tap_log import TapLog
from tapgate.decisions.edits import approve_edit
from tapgate.decisions.taps import check, refuse, tap, tap_batch
from tapgate.decisions.webhook_inbox import Inbox
from tapgate.gate.gate import Gate
from tapgate.gate.models import Request

__all__ = ["MODAL_FAILED", "REPLY_MODAL_FAILED", "TRY_AGAIN", "SlackTaps"]

_log = logging.getLogger("tapgate.channels.slack.webhook")  # the webhook's, as before the split

TRY_AGAIN = "tapgate could not record that just now; please tap the button again."
MODAL_FAILED = "tapgate could not open the deny dialog; please tap Deny again."
REPLY_MODAL_FAILED = "tapgate could not open the answer dialog; please tap Reply again."
_Tapped = Interaction | BatchInteraction
_Stored = _Tapped | RevokeInteraction  # what the inbox keeps: everything that changes state


class SlackTaps:
    """Decides taps and opens their dialogs for
    :class:`~tapgate.channels.slack.webhook.SlackWebhook`.

    ``grants`` revokes a listed grant; ``inbox`` is the webhook's (its test
    hook runs before a stored tap is applied). ``team_id`` pins the workspace
    (``None``: any); ``note_reject`` is the webhook's own counter of
    refusals, told ``"workspace"``.
    """

    def __init__(
        self,
        gate: Gate,
        replies: SlackReplies,
        *,
        grants: SlackGrantTaps,
        inbox: Inbox,
        team_id: str | None,
        tap_log: TapLog,
        note_reject: Callable[[str], None],
    ) -> None:
        self._gate = gate
        self._replies = replies
        self._grants = grants
        self._inbox = inbox
        self._team_id = team_id
        self._tap_log = tap_log
        self._note_reject = note_reject
        self.batches = SlackBatchTaps(gate, replies, self.same_workspace)
        """"Deny all"'s reason dialog (``_slack_batches``)."""
        self.edits = SlackEdits(gate, replies, self.same_workspace)
        """"Edit…"'s modal, and its submission judged before the ack (``_slack_edits``)."""

    async def apply(self, interaction: _Stored, event: str, started: float | None) -> None:
        """A stored tap, applied under its ``event`` id: a grant revoked, or a decision."""
        await self._inbox.before_apply()
        if isinstance(interaction, RevokeInteraction):
            await self._grants.revoke(interaction, event)
        else:
            await self.decide(interaction, started, event)

    async def guarded(self, interaction: _Stored, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work``; if it fails, log it and tell the tapper to try again."""
        try:
            await work
        except Exception:  # the store or Slack failed: say so rather than stay silent
            _log.exception("Slack tap on %s could not be handled", interaction.request_id)
            try:
                await self._replies.tell(interaction, TRY_AGAIN)
            except Exception:  # nothing is left to tell anyone with
                _log.exception("could not tell Slack user %s", interaction.user_id)

    async def decide(self, interaction: _Tapped, started: float | None, event: str) -> None:
        """Approve, allow for the session, or deny (with the modal's reason); or all of a batch.

        ``event`` goes with the decision (or the refusal): a replay of a tap
        already applied is a ``duplicate`` and says nothing. A batch tap is
        always told its summary: only that says which calls it decided.
        """
        if not await self.same_workspace(interaction, event):
            return
        reason = interaction.reason
        if isinstance(interaction, BatchInteraction):
            outcome = await tap_batch(self._gate, interaction.tap, reason=reason, event=event)
        elif interaction.edited is not None:
            outcome = await approve_edit(
                self._gate, interaction.tap, interaction.edited, event=event
            )
        else:
            outcome = await tap(self._gate, interaction.tap, reason=reason, event=event)
        tapped = (interaction.action, interaction.user_id, interaction.request_id)
        self._tap_log.decided(*tapped, outcome, started)
        if outcome.kind == "duplicate":
            return
        if not outcome.applied or isinstance(interaction, BatchInteraction):
            await self._replies.tell(interaction, outcome.message)

    async def ask_reason(self, interaction: Interaction) -> None:
        """Open the deny-reason modal, but only for an approver of a still-open request."""
        await self._open_modal(interaction, self._replies.open_deny_modal, MODAL_FAILED)

    async def ask_answer(self, interaction: Interaction) -> None:
        """Open a question's answer modal, but only for someone who may answer it now."""
        await self._open_modal(interaction, self._replies.open_reply_modal, REPLY_MODAL_FAILED)

    async def _open_modal(
        self,
        interaction: Interaction,
        open_modal: Callable[[Interaction, Request], Awaitable[bool]],
        failed: str,
    ) -> None:
        if not await self.same_workspace(interaction):
            return
        may = await check(self._gate, interaction.tap)
        if may.request is None or may.kind != "ready":
            await self._replies.tell(interaction, may.message)
            return
        if not await open_modal(interaction, may.request):
            await self._replies.tell(interaction, failed)

    async def same_workspace(self, interaction: _Tapped, event: str | None = None) -> bool:
        """False (and the tapper told, once per ``event``) for a tap from another workspace."""
        if self._team_id is None or interaction.team == self._team_id:
            return True
        _log.warning(
            "Slack tap from workspace %s refused (expected %s)", interaction.team, self._team_id
        )
        self._note_reject("workspace")
        refused = await refuse(self._gate, interaction.tap, why="another workspace", event=event)
        if refused.kind != "duplicate":
            await self._replies.tell(interaction, refused.message)
        return False
