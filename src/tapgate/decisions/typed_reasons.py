"""Typed reasons on LINE: "Deny…" (and a question's Reply), then the approver's next text.

LINE has no dialogs. So "Deny…" asks "Type the reason (or 'skip')", and what
the approver sends next becomes the reason the agent reads; a question's Reply
works the same way (the text is the answer; the ``answer <ref>: …`` form
still works too, :mod:`tapgate.decisions.questions`). One mechanism, one row per
approver (:mod:`tapgate.store.reasons`), four ways to end it:

- **the text** within the window: the deny carries it (``skip``, any case, or
  a blank message: no reason); a Reply is answered with it;
- **a tap elsewhere** (any other button of that approver, "Deny…" on another
  request included, or a typed ``answer <ref>: …``): the deny is made without
  a reason, a Reply is dropped, then the tap is handled;
- **the window ending** (``channels.line.reason_window``, at most the
  request's own deadline): the heartbeat's leader denies without a reason
  (:meth:`Reasons.lapse_due`); a Reply is dropped;
- **the request ending first**: decided by another approver (the text is then
  told "Already approved by bob…"), or expired, which an acknowledged "Deny…"
  turns into the verdict deny whatever ``on_timeout`` says
  (:mod:`tapgate.store.expiry`).

Meanwhile the request stays pending: other approvers still decide it.

Every decision here is an ordinary :func:`tapgate.decisions.taps.tap` by the ids
the "Deny…" tap came with: authorised against the request's approvers inside
the compare-and-set, audited, answered with :mod:`tapgate.decisions.texts`. Its
event id is ``reason:<row id>``, the same whoever decides (the live text, a
tap elsewhere, the heartbeat after a crash, another replica), so it decides
once; whether it carries the text was fixed before, by the row's own
compare-and-set. The text is hostile: capped at :data:`ANSWER_MAX`, stored as
given (the agent reads it), masked and clipped where a reply shows it.
"""

from __future__ import annotations

import logging
import secrets
from datetime import timedelta

from sqlalchemy.exc import IntegrityError

from tapgate.decisions.buttons import parse_deny_reason_postback_data, parse_postback_data
from tapgate.decisions.lookahead import Lookahead
from tapgate.decisions.questions import TypedAnswer, answer_typed
from tapgate.decisions.taps import ANSWER_MAX, Tap, TapOutcome, check, tap
from tapgate.decisions.texts import (
    REASON_SKIPPED,
    TYPE_ANSWER,
    answer_hint,
    ask_reason_message,
    is_question,
    reason_too_long,
)
from tapgate.errors import RequestNotFound
from tapgate.gate.gate import Gate
from tapgate.gate.models import Request
from tapgate.store.reasons import Busy, PendingReason, ReasonKind

__all__ = ["GRACE", "Reasons", "asks_for_text"]

_log = logging.getLogger(__name__)

GRACE = timedelta(seconds=30)
"""How long a typed or lapsed row waits for the process deciding it before the heartbeat does."""
_ASK_ATTEMPTS = 3


def asks_for_text(*, channel: str, user_id: str, data: str | None) -> Tap | None:
    """The tap a "Deny…" or a question's Reply button makes, or ``None`` for any other button.

    Both ask for the approver's next text (:meth:`Reasons.ask`) rather than
    deciding; ``data`` is the button's postback data as the channel read it.
    """
    deny_for = parse_deny_reason_postback_data(data)
    parsed = parse_postback_data(data)
    if deny_for is None and (parsed is None or parsed[0] != "reply"):
        return None
    request_id = deny_for or (parsed[1] if parsed else "")
    action: ReasonKind = "deny" if deny_for else "reply"
    return Tap(channel=channel, user_id=user_id, action=action, request_id=request_id)


class Reasons:
    """Asks for, takes and ends typed reasons for one channel's webhook (LINE's)."""

    def __init__(self, gate: Gate, *, channel: str = "line", window: float = 300.0) -> None:
        self._gate = gate
        self._channel = channel
        self._window = timedelta(seconds=window)
        self._ahead: Lookahead[PendingReason | None] = Lookahead()

    def look_ahead(self, *, user_id: str, event: str) -> None:
        """Start :meth:`interrupt`'s read for ``event`` now, beside its record (``lookahead``)."""
        self._ahead.start(event, self._pending_of(user_id))

    def drop(self, events: list[str]) -> None:
        """Forget the reads started for ``events`` that :meth:`interrupt` did not take."""
        self._ahead.drop(events)

    async def ask(self, answer: Tap, *, event: str | None) -> str | None:
        """ "Deny…" or Reply tapped: store the pending reason and say what to type.

        Refusals (not an approver, already decided, Reply on a tool call) are
        :func:`~tapgate.decisions.taps.check`'s, with the event claimed so a
        redelivery says nothing twice; ``None`` is such a redelivery. Another
        pending reason of the same approver ends first (a tap elsewhere).
        """
        request = await self._open_to(answer)
        if request is None:
            if event is not None and not await self._gate.remember_event(answer.channel, event):
                return None
            may = await check(self._gate, answer)
            if may.kind != "ready" or may.request is None:
                return may.message
            request, event = may.request, None  # open after all (a race): the event is claimed
        kind: ReasonKind = "reply" if answer.action == "reply" else "deny"
        now = self._gate.clock.now()
        approver = self._gate.directory.identify(answer.channel, answer.user_id)
        assert approver is not None  # _open_to let through one of the request's approvers
        pending = PendingReason(
            id=secrets.token_hex(16),
            approver=approver,
            kind=kind,
            target=request.id,
            channel=answer.channel,
            user_id=answer.user_id,
            asked_at=now,
            deadline=min(now + self._window, request.expires_at),
        )
        told: list[str] = []
        for _ in range(_ASK_ATTEMPTS):
            try:
                stored = await self._gate.store.reasons.ask(pending, self._event(event))
            except Busy as busy:  # the approver's earlier Deny…: a tap elsewhere ends it
                ended = await self._finish(busy.current)
                if busy.current.target == request.id and ended is not None:
                    return ended.message or None  # its own typed reason was in flight
                told += _applied(ended)
                continue
            except IntegrityError:  # a concurrent ask of the same approver won the insert
                continue
            if stored is None:
                return None
            left = (stored.deadline - now).total_seconds()  # the request may end sooner
            hint = ask_reason_message(request, left)
            return "\n".join([*told, hint if kind == "deny" else answer_hint(request.id)])
        raise RuntimeError(f"could not store the pending reason of {pending.approver}")

    async def typed(self, *, user_id: str, text: str, event: str) -> str | None:
        """A text message: the reason (answer) if one is pending, else ordinary chat.

        Returns what to reply, or ``None`` (nothing pending, or a redelivery).
        The text's event id is remembered with the row's compare-and-set, so
        the same text delivered twice is taken once.
        """
        pending = await self._pending_of(user_id)
        if pending is None or pending.state != "waiting":
            await self._gate.remember_event(self._channel, event)  # chat: claimed, unanswered
            return None
        value = text.strip()
        refused = self._refusal(pending.kind, value)
        if refused is not None:  # the window stays open for a better message
            claimed = await self._gate.remember_event(self._channel, event)
            return refused if claimed else None
        if pending.kind == "deny" and value.casefold() == REASON_SKIPPED:
            value = ""
        settled, current = await self._gate.store.reasons.settle(
            pending.id,
            to="typed",
            text=value or None,
            now=self._gate.clock.now(),
            grace=GRACE,
            event=(self._channel, event),
        )
        if settled == "duplicate" or current is None:
            return None
        outcome = await self._finish(current)  # "stale": ended just now, without the text
        return outcome.message or None if outcome is not None else None  # "": a duplicate

    async def answer(self, user_id: str, reference: str, text: str, *, event: str) -> TypedAnswer:
        """A typed ``answer <reference>: <text>`` on this channel (:func:`answer_typed`)."""
        return await answer_typed(
            self._gate,
            channel=self._channel,
            user_id=user_id,
            reference=reference,
            text=text,
            event=event,
        )

    async def seen(self, event: str) -> bool:
        """Whether this channel's ``event`` was applied before: a redelivery says nothing twice."""
        return await self._gate.store.seen_event(self._channel, event)

    async def interrupt(self, *, user_id: str, event: str | None = None) -> str | None:
        """A tap elsewhere: end the approver's pending reason without text first.

        Returns the sentence of the decision it made (a deny without a
        reason), or ``None`` when there was nothing to decide. ``event`` is
        the tap's id: its read started by :meth:`look_ahead` is used if there
        is one, and a redelivery of an event applied before is not a tap
        elsewhere (it was applied before this reason was asked for), so it
        ends nothing. Asked only when a reason is pending: the common tap
        pays no extra read.
        """
        ahead = self._ahead.take(event)
        pending = await ahead if ahead is not None else await self._pending_of(user_id)
        if pending is None:
            return None
        if event is not None and await self._gate.store.seen_event(self._channel, event):
            return None
        return "\n".join(_applied(await self._finish(pending))) or None

    async def _finish(self, pending: PendingReason) -> TapOutcome | None:
        """Decide what ``pending`` decides (lapsing it first if it still waits); drop its row."""
        gate = self._gate
        if pending.state == "waiting":
            _, current = await gate.store.reasons.settle(
                pending.id, to="lapsed", now=gate.clock.now(), grace=GRACE
            )
            if current is None:
                return None  # decided and deleted by someone else meanwhile
            pending = current
        outcome: TapOutcome | None = None
        if pending.kind == "reply" and pending.text is None:
            pass  # a Reply that got no answer decides nothing: the question stays open
        elif pending.state == "typed" or await self._still_open(pending.target):
            answer = Tap(
                channel=pending.channel,
                user_id=pending.user_id,
                action=pending.kind,
                request_id=pending.target,
            )
            outcome = await tap(gate, answer, reason=pending.text, event=f"reason:{pending.id}")
        await gate.store.reasons.drop(pending.id)
        return outcome

    async def _open_to(self, answer: Tap) -> Request | None:
        """The request, when ``answer``'s tapper may act on it now (no audit: a pre-check).

        Whatever this lets through is authorised again by the decision's
        compare-and-set; what it stops goes to :func:`check` for the sentence.
        """
        approver = self._gate.directory.identify(answer.channel, answer.user_id)
        try:
            request = await self._gate.get_request(answer.request_id)
        except RequestNotFound:
            return None
        live = request.is_pending and request.expires_at > self._gate.clock.now()
        fits = is_question(request) or answer.action != "reply"
        return request if live and fits and approver in request.approvers else None

    async def _still_open(self, request_id: str) -> bool:
        try:
            request = await self._gate.get_request(request_id)
        except RequestNotFound:
            return False
        return request.is_pending

    async def _pending_of(self, user_id: str) -> PendingReason | None:
        approver = self._gate.directory.identify(self._channel, user_id)
        return None if approver is None else await self._gate.store.reasons.of(approver)

    async def lapse_due(self, limit: int = 100) -> int:
        """The heartbeat's duty: end the pending reasons whose window (or grace) is over.

        A waiting row lapses (deny without a reason, a Reply dropped); a typed
        or lapsed row left by a process that died is decided now. Each is
        decided once, whoever else tries (its event id). Returns how many ended.
        """
        ended = 0
        for pending in await self._gate.store.reasons.due(self._gate.clock.now(), limit=limit):
            try:
                await self._finish(pending)
            except Exception:  # one row must not stop the others; it is due again next beat
                _log.exception("pending reason %s could not be ended", pending.id)
                continue
            ended += 1
        return ended

    def _event(self, event: str | None) -> tuple[str, str] | None:
        return None if event is None else (self._channel, event)

    @staticmethod
    def _refusal(kind: ReasonKind, value: str) -> str | None:
        if len(value) > ANSWER_MAX:
            return reason_too_long(ANSWER_MAX)
        if kind == "reply" and not value:
            return TYPE_ANSWER
        return None


def _applied(outcome: TapOutcome | None) -> list[str]:
    """The sentence of a decision a tap elsewhere made, for the tap's own reply."""
    return [outcome.message] if outcome is not None and outcome.applied else []
