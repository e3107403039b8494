"""What one Discord interaction means: a decision, a modal opened, or a refusal, and the answer.

:class:`~tapgate.channels.discord.webhook.DiscordInteractions` verifies,
stores and times an interaction; this module reads it and says what to
answer Discord with (the interaction response)::

    button Deny… / Reply… / Deny all / Edit… ──check──► modal (type 9) | ephemeral refusal
    button Open inbox ──► ephemeral sign-in link (:mod:`.commands`)
    button Approve / session / Always / Dismiss / Approve all / Revoke ──► stored, then decided
    modal submit (deny reason / answer / Deny all's reason / edit) ──► stored, then decided
    decided ──► type 7: the pressed card redrawn from the stored outcome
    refused, late, counted ──► type 4, flags 64: the sentence, to the presser only

What a press *means* (who may decide, the compare-and-set, the sentences)
is :mod:`tapgate.decisions.taps` (and ``batch_taps``, ``edits``,
``chat_grants``); this module only speaks Discord.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from tapgate.channels.discord.batch_cards import render_discord_batch
from tapgate.channels.discord.cards import edit_offer, render_discord
from tapgate.channels.discord.commands import DiscordCommands
from tapgate.channels.discord.edits import DiscordEdits, parse_edit_custom_id
from tapgate.channels.discord.interactions import Interaction
from tapgate.channels.discord.modals import (
    ANSWER_INPUT,
    REASON_INPUT,
    REASON_MAX,
    answer_modal,
    deny_all_modal,
    deny_modal,
)
from tapgate.channels.discord.notifier import resolved_body
from tapgate.channels.discord.responses import Response, ephemeral, update
from tapgate.channels.tap_log import TapLog
from tapgate.decisions.buttons import (
    INBOX_POSTBACK,
    parse_batch_postback_data,
    parse_deny_reason_postback_data,
    parse_postback_data,
    parse_revoke_postback_data,
)
from tapgate.decisions.remember import Offer
from tapgate.decisions.taps import (
    ANSWER_MAX,
    BatchTap,
    Tap,
    TapOutcome,
    check,
    check_batch_tap,
    tap,
    tap_batch,
)
from tapgate.delivery.batch_view import present_batch
from tapgate.delivery.presentation import present
from tapgate.errors import RequestNotFound
from tapgate.gate.batching import read_batch
from tapgate.gate.gate import Gate
from tapgate.gate.models import Request

__all__ = ["NO_LONGER_VALID", "DiscordPresses"]

NO_LONGER_VALID = "This button is no longer valid."
_TOO_LONG = f"That answer is longer than {ANSWER_MAX} characters; please shorten it."


class DiscordPresses:
    """Reads interactions for the webhook; ``tool_shell_args`` and ``offers`` draw cards as sent."""

    def __init__(
        self,
        gate: Gate,
        *,
        tap_log: TapLog,
        tool_shell_args: Mapping[str, str],
        offers: Callable[[Request], Offer] | None,
        commands: DiscordCommands,
        inbox_button: bool = False,
    ) -> None:
        self._gate = gate
        self._tap_log = tap_log
        self._shell = dict(tool_shell_args)
        self._offers = offers
        self._inbox = inbox_button
        self.commands = commands
        """The slash commands, and the Revoke and "Open inbox" presses."""
        self._edits = DiscordEdits(gate)

    @staticmethod
    def may_decide(interaction: Interaction) -> bool:
        """A press that decides (stored before it is applied), or a modal's submission."""
        data = interaction.custom_id
        batch = parse_batch_postback_data(data)
        if interaction.kind == "modal":
            replied = parse_postback_data(data)
            return (
                parse_deny_reason_postback_data(data) is not None
                or (replied is not None and replied[0] == "reply")
                or (batch is not None and batch[0] == "deny_all")
                or parse_edit_custom_id(data) is not None
            )
        parsed = parse_postback_data(data)
        if parsed is not None:
            return parsed[0] not in ("deny", "reply")
        if batch is not None:
            return batch[0] != "deny_all"
        return parse_revoke_postback_data(data) is not None

    async def without_storing(self, interaction: Interaction) -> Response | None:
        """The answer to an interaction that decides nothing; ``None``: store it, then decide.

        A slash command, a press that opens a modal or a link, and an edit the
        policy refuses (judged before it is stored, so nothing is decided).
        """
        user = interaction.user_id
        if interaction.kind not in ("component", "modal"):
            if interaction.kind != "command" or user is None:
                return ephemeral("tapgate cannot read that; use its buttons or /help.")
            return await self.commands.run(interaction.command, user)
        if not self.may_decide(interaction):
            return await self.at_once(interaction)
        request_id = parse_edit_custom_id(interaction.custom_id)
        if interaction.kind != "modal" or request_id is None or user is None:
            return None
        why = await self._edits.judge(user, request_id, interaction.values)
        return None if why is None else ephemeral(why)

    async def at_once(self, interaction: Interaction) -> Response:
        """The answer to a press that decides nothing: a modal, a link, or why not."""
        user, data = interaction.user_id, interaction.custom_id
        if interaction.kind != "component" or user is None:
            return ephemeral(NO_LONGER_VALID)
        opened = await self._opens(user, data)
        if opened is not None:
            return opened
        parsed = parse_postback_data(data)
        if parsed is None:
            return ephemeral(NO_LONGER_VALID)
        action, request_id = parsed
        asked = Tap(channel="discord", user_id=user, action=action, request_id=request_id)
        may = await check(self._gate, asked)
        if may.kind != "ready":
            return ephemeral(may.message)
        return deny_modal(request_id) if action == "deny" else answer_modal(request_id)

    async def _opens(self, user: str, data: str | None) -> Response | None:
        """Open inbox, Edit… and Deny all's answers; ``None`` for any other button."""
        if data == INBOX_POSTBACK:
            return await self.commands.inbox(user)
        edited = parse_edit_custom_id(data)
        if edited is not None:
            opened = await self._edits.open(user, edited)
            return ephemeral(opened) if isinstance(opened, str) else opened
        batch = parse_batch_postback_data(data)
        if batch is None:
            return None
        answer_all = BatchTap(channel="discord", user_id=user, action=batch[0], batch_id=batch[1])
        may = await check_batch_tap(self._gate, answer_all)
        return deny_all_modal(batch[1]) if may.kind == "ready" else ephemeral(may.message)

    async def decide(self, interaction: Interaction, started: float | None) -> Response | None:
        """Decide a stored press or submission once; the answer (``None``: a duplicate)."""
        user = interaction.user_id or ""
        event = interaction.interaction_id
        data = interaction.custom_id
        batch = parse_batch_postback_data(data)
        if batch is not None:
            action, batch_id = batch
            answer_all = BatchTap(channel="discord", user_id=user, action=action, batch_id=batch_id)
            reason = _reason(interaction) if interaction.kind == "modal" else None
            outcome = await tap_batch(self._gate, answer_all, reason=reason, event=event)
            self._tap_log.decided(action, user, batch_id, outcome, started)
            return await self._answer(outcome, user, batch_id=batch_id)
        grant = parse_revoke_postback_data(data)
        if grant is not None and interaction.kind == "component":
            return await self.commands.revoke(user, grant, event)
        edited = parse_edit_custom_id(data) if interaction.kind == "modal" else None
        if edited is not None:
            outcome = await self._edits.decide(user, edited, interaction.values, event)
            self._tap_log.decided("approve", user, edited, outcome, started)
            return await self._answer(outcome, user, batch_id=None)
        return await self._decide_tap(interaction, started)

    async def _decide_tap(self, interaction: Interaction, started: float | None) -> Response | None:
        """A single request's press or its deny / answer modal, decided once."""
        user, event = interaction.user_id or "", interaction.interaction_id
        tapped = self._tap(interaction)
        if tapped is None or (tapped[0].action == "reply" and not tapped[1]):
            # Decides nothing: claimed here, which also settles its inbox row.
            if not await self._gate.remember_event("discord", event):
                return None
            if tapped is None:
                return ephemeral(NO_LONGER_VALID)
            return ephemeral(_TOO_LONG if tapped[1] is None else "Type an answer to reply.")
        answer, reason = tapped
        outcome = await tap(self._gate, answer, reason=reason, event=event)
        self._tap_log.decided(answer.action, user, answer.request_id, outcome, started)
        return await self._answer(outcome, user, batch_id=None)

    def _tap(self, interaction: Interaction) -> tuple[Tap, str | None] | None:
        """The tap a press or submission makes, and its reason (``None``: an answer too long)."""
        user = interaction.user_id or ""
        if interaction.kind == "modal":
            denied = parse_deny_reason_postback_data(interaction.custom_id)
            if denied is not None:
                tap_ = Tap(channel="discord", user_id=user, action="deny", request_id=denied)
                return tap_, _reason(interaction)
            parsed = parse_postback_data(interaction.custom_id)
            if parsed is None or parsed[0] != "reply":
                return None
            text = interaction.values.get(ANSWER_INPUT, "").strip()
            tap_ = Tap(channel="discord", user_id=user, action="reply", request_id=parsed[1])
            return tap_, (text if len(text) <= ANSWER_MAX else None) if text else ""
        parsed = parse_postback_data(interaction.custom_id)
        if parsed is None:
            return None
        return Tap(channel="discord", user_id=user, action=parsed[0], request_id=parsed[1]), None

    async def _answer(
        self, outcome: TapOutcome, user: str, *, batch_id: str | None
    ) -> Response | None:
        if outcome.kind == "duplicate":
            return None
        if outcome.kind not in ("applied", "partial"):
            return ephemeral(outcome.message)
        request = outcome.request
        batch = batch_id or (request.batch_id if request is not None else None)
        if batch is not None:
            card = await self._batch_card(batch, outcome.approver)
        elif request is not None:
            card = self.card(request)
        else:
            card = None
        return ephemeral(outcome.message) if card is None else update(card)

    def card(self, request: Request) -> Response:
        """``request``'s card as the outbox would draw it now: decided, or still asking."""
        view = present(
            request,
            tool_shell_arg=self._shell.get(request.tool),
            offer=self._offers(request) if self._offers is not None else None,
        )
        resolved = resolved_body(view, request)
        if resolved is not None:
            return resolved
        return render_discord(view, inbox=self._inbox, edit=edit_offer(view, request))

    async def _batch_card(self, batch_id: str, approver: str | None) -> Response | None:
        """The batch card of ``approver``'s calls, as the outbox draws it."""
        try:
            state = await read_batch(self._gate, batch_id)
        except RequestNotFound:
            return None
        mine = [
            state.requests[rid]
            for rid in state.batch.request_ids
            if rid in state.requests and approver in state.requests[rid].approvers
        ]
        if not mine:
            return None
        batch = present_batch(mine, tool_shell_args=self._shell)
        return render_discord_batch(batch, inbox=self._inbox)


def _reason(interaction: Interaction) -> str | None:
    """A deny reason typed in a modal (``None`` when left empty)."""
    return interaction.values.get(REASON_INPUT, "").strip()[:REASON_MAX] or None
