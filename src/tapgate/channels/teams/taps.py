"""What one press of a Teams card means, and the card it is answered with.

The press is already verified (:mod:`.auth`) and stored in the webhook inbox
(:mod:`.webhook`); here it becomes a :class:`~tapgate.decisions.taps.Tap` by
``<conversation.tenantId>/<from.aadObjectId>`` and goes through the one
door of :mod:`tapgate.decisions.taps` (authorised against *this* request's
approvers inside the compare-and-set, decided once, refusals audited)::

    "v=1&a=revoke&g=<grant>" ──chat_grants.revoke_own────────► the grants listing now
    "v=1&a=reply&r=<id>", empty box ──claimed──────────────────► "type your answer first"
    "v=1&a=<action>&r=<id>"  ──presses.press (reason: the box)─► the request's card now
    "v=1&a=<all>&b=<batch>"  ──presses.press──────────────────► the batch's card now
    anything else            ──presses.press: refused─────────► "no longer valid"

The answer is always the card *as stored after the press* (decided: no
buttons, who and when; still open: the same card), with the outcome's
sentence on top when the press did not decide (not an approver, already
decided, counted towards a quorum). A redelivery of a press that was applied
says nothing new: it gets the card as it is.
"""

from __future__ import annotations

import logging
from functools import partial
from typing import Any

from tapgate.channels.tap_log import TapLog
from tapgate.channels.teams.activities import Activity
from tapgate.channels.teams.batch_cards import render_batch
from tapgate.channels.teams.card_parts import attachment_activity, card, line
from tapgate.channels.teams.cards import render_request
from tapgate.channels.teams.commands import TeamsCommands
from tapgate.decisions.buttons import (
    BATCH_ACTIONS,
    BatchAction,
    TapAction,
    parse_postback_data,
    parse_revoke_postback_data,
)
from tapgate.decisions.presses import press
from tapgate.decisions.remember import offer_for
from tapgate.decisions.taps import TapOutcome
from tapgate.decisions.texts import NO_LONGER_VALID
from tapgate.delivery.batch_view import present_batch
from tapgate.delivery.presentation import present
from tapgate.errors import RequestNotFound
from tapgate.gate.gate import Gate
from tapgate.gate.models import Request

__all__ = ["NO_LONGER_VALID", "TYPE_ANSWER_FIRST", "TeamsTaps"]

_log = logging.getLogger("tapgate.channels.teams.webhook")

TYPE_ANSWER_FIRST = "Type your answer in the box, then press Reply."
_CHANNEL = "teams"


class TeamsTaps:
    """Decides presses for the webhook and draws the card each is answered with."""

    def __init__(
        self, gate: Gate, tap_log: TapLog, commands: TeamsCommands, public_url: str | None = None
    ) -> None:
        self._gate = gate
        self._commands = commands
        self._public_url = public_url
        self._tap_log = tap_log
        self._shell = {t.name: t.shell for t in gate.policy.spec.tools if t.shell}
        self._offers = partial(offer_for, gate.policy)

    async def press(self, activity: Activity, started: float | None) -> dict[str, Any]:
        """Apply the press; the message activity (one card) to answer it with."""
        data = activity.action
        grant_id = parse_revoke_postback_data(data)
        if grant_id is not None:  # a Revoke on a "grants" listing
            return await self._commands.revoke(activity.presser, grant_id, activity.activity_id)
        parsed = parse_postback_data(data)
        if parsed is not None and parsed[0] == "reply" and not activity.input("answer"):
            await self._gate.remember_event(_CHANNEL, activity.activity_id)
            return await self._request_card(parsed[1], TYPE_ANSWER_FIRST, by=activity.presser)
        pressed = await press(
            self._gate,
            channel=_CHANNEL,
            user_id=activity.presser,
            data=data,
            event=activity.activity_id,
            reason=partial(_reason, activity),
        )
        self._tap_log.pressed(pressed, activity.presser, activity.activity_id, started)
        if pressed.action is None:
            return _notice_only(NO_LONGER_VALID)
        if pressed.action in BATCH_ACTIONS:
            return await self._batch_card(pressed.target, pressed.said, by=activity.presser)
        notice, request = _notice(pressed.outcome), pressed.outcome.request
        return await self._request_card(pressed.target, notice, request, by=activity.presser)

    async def _request_card(
        self, request_id: str, notice: str | None, known: Request | None = None, *, by: str
    ) -> dict[str, Any]:
        request = known
        if request is None or request.is_pending:  # a quorum's count, a refusal: read it now
            try:
                request = await self._gate.get_request(request_id)
            except RequestNotFound:
                return _notice_only(notice or NO_LONGER_VALID)
        if request.batch_id is not None:  # a call's own button on a batch card
            return await self._batch_card(request.batch_id, notice, by=by)
        view = present(
            request,
            tool_shell_arg=self._shell.get(request.tool),
            now=self._gate.clock.now(),
            offer=self._offers(request),
        )
        return render_request(view, request, notice=notice, public_url=self._public_url)

    async def _batch_card(self, batch_id: str, notice: str | None, *, by: str) -> dict[str, Any]:
        """The batch card as the presser sees it: the calls they decide, as they are now."""
        requests = await self._gate.batch_requests(batch_id)
        approver = self._gate.directory.identify(_CHANNEL, by)
        mine = [r for r in requests if approver in r.approvers] or requests
        if not mine:
            return _notice_only(notice or NO_LONGER_VALID)
        view = present_batch(mine, tool_shell_args=self._shell, now=self._gate.clock.now())
        return render_batch(view, notice=notice, public_url=self._public_url)


def _reason(activity: Activity, action: TapAction | BatchAction) -> str | None:
    """The card's box a press carries: a deny's (or Deny all's) reason, a reply's answer."""
    if action in ("deny", "deny_all"):
        return activity.input("reason")
    return activity.input("answer") if action == "reply" else None


def _notice(outcome: TapOutcome) -> str | None:
    """The sentence shown on top of the card, when the press did not simply decide."""
    if outcome.applied or outcome.kind == "duplicate":
        return None
    return outcome.message or None


def _notice_only(text: str) -> dict[str, Any]:
    return attachment_activity(card([line(text, weight="Bolder")], []), text)
