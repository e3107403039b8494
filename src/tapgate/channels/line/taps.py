"""What one LINE event means: a tap, a typed reason or answer, a command, each with its reply.

:class:`~tapgate.channels.line.webhook.LineWebhook` verifies, stores and acknowledges
a body's events and sends the replies; this module reads one event and
decides what to do and say::

    group or room ──► "1:1 chat only"
    postback ─► "Open inbox" ──► ``_line_commands`` (inbox)
             ─► Revoke ──► ``_line_grants`` (core.own_grants)
             ─► Deny… / Reply ──core.reasons.ask──► "Type the reason"
             ─► a decision's button ──core.reasons.interrupt, decisions.presses.press──► reply
    "grants" / "inbox" / "help" text ──► ``_line_commands``
    "answer <ref>: …" text ──decisions.questions.answer_typed──► reply
    other text ──core.reasons.typed──► the reason, or nothing
    "id" text / follow ──► reply with the user id

What a tap *means* (who may decide, the compare-and-set, the sentences) is
``tapgate.decisions.taps``; this module only speaks LINE.

LINE has no dialogs, so "Deny…" and a question's Reply are two steps: the tap
(Reply opens the keyboard with ``answer 3fA9xK2b: `` typed in), then the
approver's next text message, which is the reason or the answer
(:mod:`tapgate.decisions.typed_reasons`; any other tap of theirs first ends what is
pending). That text is signed by LINE like a tap and carries the sender's user
id, so it is authorised exactly like a tap; its ``webhookEventId`` is
remembered in the transaction that takes it, as a tap's is.

Logged under the webhook's own logger name, as before this module existed.
"""

from __future__ import annotations

import logging

from tapgate.channels.line.commands import LineAnswer, run
from tapgate.channels.line.events import Event
from tapgate.channels.line.grants import revoke_answer
from tapgate.channels.tap_log import TapLog
from tapgate.decisions.buttons import INBOX_POSTBACK, parse_revoke_postback_data
from tapgate.decisions.chat_commands import LinkMaker
from tapgate.decisions.presses import press
from tapgate.decisions.typed_reasons import Reasons, asks_for_text
from tapgate.gate.gate import Gate

__all__ = ["LineTaps"]

_log = logging.getLogger("tapgate.channels.line.webhook")  # the webhook's, as before the split

_ONE_TO_ONE_ONLY = (
    "tapgate works in a 1:1 chat only: open a chat with this bot "
    "to approve requests or to see your user id."
)


class LineTaps:
    """Reads one LINE event for :class:`~tapgate.channels.line.webhook.LineWebhook`: what to reply.

    ``reasons`` holds the typed reasons and answers being waited for;
    ``tap_log`` is the webhook's; ``links`` mints the web inbox's sign-in
    links (``None``: the server has no public URL).
    """

    def __init__(
        self, gate: Gate, *, reasons: Reasons, tap_log: TapLog, links: LinkMaker | None
    ) -> None:
        self._gate = gate
        self._reasons = reasons
        self._tap_log = tap_log
        self._links = links

    def look_ahead(self, events: list[Event]) -> None:
        """Start the pending-reason reads the taps among ``events`` will make (``lookahead``)."""
        for event in events:
            if event.data is not None and event.user_id is not None:
                self._reasons.look_ahead(user_id=event.user_id, event=event.event_id)

    def drop(self, events: list[Event]) -> None:
        """Forget the reads :meth:`look_ahead` started for ``events`` and nobody took."""
        self._reasons.drop([event.event_id for event in events])

    async def claim(self, event: Event) -> bool:
        """Remember ``event`` as handled; False if it was (a redelivery: say nothing)."""
        return await self._gate.remember_event("line", event.event_id)

    async def respond(self, event: Event, started: float | None) -> LineAnswer | None:
        """What ``event`` does, and the reply to it (``None``: nothing to say)."""
        # In a group or room LINE does not promise the tapper's userId, and a
        # decision must be attributable to one approver.
        if event.source_type != "user" or event.user_id is None:
            return _ONE_TO_ONE_ONLY
        user_id = event.user_id
        if event.kind == "postback":
            return await self._postback(event, user_id, started)
        if event.command is not None:  # "grants", "inbox", "help": never a reason, ends nothing
            return await self._command(event, event.command, user_id)
        if event.answer is not None:  # addressed to one question: whatever was pending ends
            before = await self._reasons.interrupt(user_id=user_id, event=event.event_id)
            reference, answer = event.answer
            said = await self._answer(event, user_id, reference, answer, started)
            return _joined(before, said)
        if event.text is not None and not event.is_id_command:
            return await self._reasons.typed(user_id=user_id, text=event.text, event=event.event_id)
        return f"Your LINE user id is {user_id}; add it to tapgate.yaml under approvers."

    async def _command(self, event: Event, command: str, user_id: str) -> LineAnswer | None:
        """A typed command, answered once: a redelivery mints no second link, says nothing."""
        if not await self.claim(event):
            return None
        return await run(self._gate, command, user_id, links=self._links)

    async def _postback(
        self, event: Event, user_id: str, started: float | None
    ) -> LineAnswer | None:
        """Deny… and Reply ask for text; a decision's button first ends what was pending.

        A listed grant's Revoke decides no request, so a reason being typed stays pending.
        """
        if event.data == INBOX_POSTBACK:  # a card's "Open inbox": decides nothing, claimed once
            if not await self.claim(event):
                return None
            return await run(self._gate, "inbox", user_id, links=self._links)
        grant_id = parse_revoke_postback_data(event.data)
        if grant_id is not None:  # a listed grant's Revoke (see _line_grants)
            return await revoke_answer(self._gate, user_id, grant_id, event.event_id)
        asked = asks_for_text(channel="line", user_id=user_id, data=event.data)
        if asked is not None:
            _log.info("LINE %s tap by %s on request %s", asked.action, user_id, asked.request_id)
            return await self._reasons.ask(asked, event=event.event_id)
        before = await self._reasons.interrupt(user_id=user_id, event=event.event_id)
        return _joined(before, await self._button(event, user_id, started))

    async def _button(self, event: Event, user_id: str, started: float | None) -> str | None:
        """A button that decides (``decisions.presses``): a request's, a batch's, or one refused."""
        pressed = await press(
            self._gate, channel="line", user_id=user_id, data=event.data, event=event.event_id
        )
        self._tap_log.pressed(pressed, user_id, event.event_id, started)
        return pressed.said

    async def _answer(
        self, event: Event, user_id: str, reference: str, answer: str, started: float | None
    ) -> str | None:
        """A typed ``answer <reference>: …`` (``Reasons.answer``), logged when it decided."""
        typed = await self._reasons.answer(user_id, reference, answer, event=event.event_id)
        self._tap_log.answered(typed, user_id, started)
        return typed.reply


def _joined(before: str | None, said: str | None) -> str | None:
    """One reply for two outcomes (a deny a tap elsewhere made, then the tap's own)."""
    if before is None or said is None:
        return before or said
    return f"{before}\n{said}"
