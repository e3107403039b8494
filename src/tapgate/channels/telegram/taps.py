"""What one Telegram update means: a press, a typed reason or answer, a command.

The receiver (:mod:`.receiver`) verifies, stores and acknowledges updates
and sends what this module says; this module reads one update::

    not a private chat ──► "private chat only" (a group member's press decides nothing)
    press ─► Revoke ──► commands.revoke (decisions.chat_grants)
          ─► Deny… / Reply ──decisions.typed_reasons.ask──► a ForceReply prompt
          ─► a decision's button ──interrupt, decisions.presses.press──► the toast
    "/start" "/grants" "/inbox" "/help" ──► commands
    "answer <ref>: …" ──decisions.questions.answer_typed──► reply
    other text ──decisions.typed_reasons.typed──► the reason (or answer), or nothing

The presser is ``callback_query.from.id``, checked against *this* request's
approvers inside the decision's compare-and-set; a refusal is audited there
and told in the press's toast. Every sentence is :mod:`tapgate.decisions.texts`'.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from tapgate.channels.tap_log import TapLog
from tapgate.channels.telegram.commands import Say, command_word, plain, revoke, run
from tapgate.channels.telegram.updates import Update
from tapgate.decisions.buttons import INBOX_POSTBACK, parse_answer, parse_revoke_postback_data
from tapgate.decisions.chat_commands import LinkMaker
from tapgate.decisions.presses import press
from tapgate.decisions.typed_reasons import Reasons, asks_for_text
from tapgate.gate.gate import Gate

__all__ = ["Answer", "TelegramTaps"]

_log = logging.getLogger("tapgate.channels.telegram")

_PRIVATE_ONLY = (
    "tapgate works in a private chat only: open a chat with this bot to approve "
    "requests or to see your user id (/start)."
)
_TOAST_MAX = 200
_LATE_REPLY = (
    "That reply came too late: nothing is waiting for it any more (its time ran out, or the "
    "request was decided), so it was not used. The card shows the outcome."
)


@dataclass(frozen=True, kw_only=True, slots=True)
class Answer:
    """What to do after an update: the press's toast (``answerCallbackQuery``) and a message."""

    toast: str | None = None
    say: Say | None = None


_NOTHING = Answer()


class TelegramTaps:
    """Reads one update for the receiver; ``reasons`` holds the typed reasons waited for."""

    def __init__(
        self, gate: Gate, *, reasons: Reasons, tap_log: TapLog, links: LinkMaker | None
    ) -> None:
        self._gate = gate
        self._reasons = reasons
        self._tap_log = tap_log
        self._links = links

    async def claim(self, update: Update) -> bool:
        """Remember ``update`` as handled; False if it was (a redelivery: say nothing)."""
        return await self._gate.remember_event("telegram", update.event_id)

    async def respond(self, update: Update, started: float | None) -> Answer:  # noqa: PLR0911 - a return per branch of the module diagram
        """What ``update`` does, and what to tell its sender."""
        user = update.user_id
        if user is None:
            return _NOTHING
        if not update.private:  # in a group anyone may press; a decision belongs to one person
            if not await self.claim(update):
                return _NOTHING
            return Answer(toast=_PRIVATE_ONLY) if update.kind == "press" else _NOTHING
        if update.kind == "press":
            return await self._press(update, user, started)
        word = command_word(update.text)
        if word is not None:  # decides nothing; never a reason; ends nothing pending
            if not await self.claim(update):
                return _NOTHING
            return Answer(say=await run(self._gate, word, user, links=self._links))
        answer = parse_answer(update.text)
        if answer is not None:  # addressed to one question: whatever was pending ends
            before = await self._reasons.interrupt(user_id=user)
            said = await self._answer(update, user, *answer, started)
            return Answer(say=_joined(before, said))
        fresh = update.replying and not await self._reasons.seen(update.event_id)
        said = await self._reasons.typed(
            user_id=user, text=update.text or "", event=update.event_id
        )
        if not said and fresh:  # a reply to a prompt nothing waits on: say so, once
            said = _LATE_REPLY
        return Answer(say=plain(said)) if said else _NOTHING

    async def _press(self, update: Update, user: str, started: float | None) -> Answer:  # noqa: PLR0911 - as respond
        data = update.data
        if data == INBOX_POSTBACK:
            if not await self.claim(update):
                return _NOTHING
            return Answer(toast="", say=await run(self._gate, "inbox", user, links=self._links))
        grant_id = parse_revoke_postback_data(data)
        if grant_id is not None:
            said = await revoke(self._gate, user, grant_id, update.event_id)
            return Answer(toast="", say=said) if said is not None else _NOTHING
        asked = asks_for_text(channel="telegram", user_id=user, data=data)
        if asked is not None:
            _log.info("Telegram %s press by %s on request %s", asked.action, user, asked.request_id)
            told = await self._reasons.ask(asked, event=update.event_id)
            if told is None:
                return _NOTHING
            prompt = Say(text=plain(told).text, force_reply=True)
            return Answer(toast=_toast(told), say=prompt)
        before = await self._reasons.interrupt(user_id=user)
        toast = await self._button(update, user, started)
        if toast is None and before is None:
            return _NOTHING
        return Answer(toast=_toast(toast or ""), say=plain(before) if before else None)

    async def _button(self, update: Update, user: str, started: float | None) -> str | None:
        """A button that decides (``decisions.presses``): a request's, a batch's, or one refused."""
        pressed = await press(
            self._gate, channel="telegram", user_id=user, data=update.data, event=update.event_id
        )
        self._tap_log.pressed(pressed, user, update.event_id, started)
        return pressed.said

    async def _answer(
        self, update: Update, user: str, reference: str, text: str, started: float | None
    ) -> str | None:
        """A typed ``answer <reference>: …`` (``Reasons.answer``), logged when it decided."""
        typed = await self._reasons.answer(user, reference, text, event=update.event_id)
        self._tap_log.answered(typed, user, started)
        return typed.reply


def _toast(text: str) -> str:
    """``answerCallbackQuery`` takes 0-200 characters: the sentence, cut visibly."""
    return text if len(text) <= _TOAST_MAX else text[: _TOAST_MAX - 1] + "…"


def _joined(before: str | None, said: str | None) -> Say | None:
    text = "\n".join(t for t in (before, said) if t)
    return plain(text) if text else None
