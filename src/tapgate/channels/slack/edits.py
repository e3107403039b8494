"""A card's "Edit…" on Slack: the edit modal, and its submission judged before the ack.

What an edit means (the form, the checks, the policy's second look, the
decision) is :mod:`tapgate.decisions.edits`; this module only speaks Slack:

    Edit… ─► core.taps.check, core.edits.not_editable ─► views.open (edit modal) | ephemeral
    submitted ─► core.edits.prepare ─► ack with errors (the modal stays open, nothing decided)
                                    └► the edited Interaction: stored, ack, approve_edit

Judging before the ack is what lets a refusal show *in* the modal (Slack's
``response_action: errors``); it reads one request and runs the policy, well
inside Slack's 3 seconds. The decision itself still goes through the inbox
(record before acknowledging) and :func:`tapgate.decisions.edits.approve_edit`,
which judges again.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable

from tapgate.channels.slack.payloads import Interaction
from tapgate.channels.slack.replies import SlackReplies
from tapgate.decisions.edits import WHOLE, not_editable, prepare
from tapgate.decisions.taps import check
from tapgate.gate.gate import Gate

__all__ = ["EDIT_MODAL_FAILED", "SlackEdits"]

EDIT_MODAL_FAILED = "tapgate could not open the edit dialog; please tap Edit again."
_FIRST_FIELD = "arg0"  # where an error about the whole edit is shown


class SlackEdits:
    """The edit modal for :class:`~tapgate.channels.slack.webhook.SlackWebhook`.

    ``same_workspace`` is the webhook's own check (it refuses, audits and tells).
    """

    def __init__(
        self,
        gate: Gate,
        replies: SlackReplies,
        same_workspace: Callable[[Interaction], Awaitable[bool]],
    ) -> None:
        self._gate = gate
        self._replies = replies
        self._same_workspace = same_workspace

    async def open_modal(self, interaction: Interaction) -> None:
        """Open the edit modal, but only for an approver of an open, editable request."""
        if not await self._same_workspace(interaction):
            return
        may = await check(self._gate, interaction.tap)
        if may.request is None or may.kind != "ready":
            await self._replies.tell(interaction, may.message)
            return
        why = not_editable(may.request)
        if why is not None:
            await self._replies.tell(interaction, why)
            return
        if not await self._replies.open_edit_modal(interaction, may.request):
            await self._replies.tell(interaction, EDIT_MODAL_FAILED)

    async def judge(
        self, interaction: Interaction, texts: dict[str, str | None]
    ) -> Interaction | dict[str, str]:
        """The edited approval to record, or the modal's errors by block id (nothing decided)."""
        judged = await prepare(self._gate, interaction.tap, texts)
        if judged.arguments is None:
            errors = dict(judged.errors)
            whole = errors.pop(WHOLE, None)
            if whole is not None:
                first = errors.get(_FIRST_FIELD)
                errors[_FIRST_FIELD] = whole if first is None else f"{whole} {first}"
            return {block: message[:2000] for block, message in errors.items()}
        return dataclasses.replace(interaction, edited=judged.arguments)
