"""A typed answer: its reference turned into the one question it names, then answered.

Chats without a modal (LINE, Telegram) let an approver answer a question by
typing ``answer <reference>: <text>`` (:func:`tapgate.decisions.buttons.parse_answer`),
where the reference is the question's id or a prefix of it.
:func:`find_question` finds the question; :func:`answer_typed` is the whole
typed answer, the same on every channel: refused before the gate is asked
(nothing typed, too long, no such question, ambiguous), or an ordinary tap
(:func:`tapgate.decisions.taps.tap`), which authorises and audits as for any
other. A channel only reads the reference and text off its wire and renders
the reply.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import partial

from tapgate.decisions import texts
from tapgate.decisions.taps import ANSWER_MAX, Tap, TapOutcome, tap
from tapgate.errors import RequestNotFound
from tapgate.gate.doors import QuestionLookup
from tapgate.gate.gate import Gate
from tapgate.gate.models import CONTACT_TOOL, Request

__all__ = ["TypedAnswer", "answer_typed", "find_question"]

_log = logging.getLogger(__name__)

# Bounds of the queries that resolve a typed reference (tool and id prefix are
# matched in SQL; the prefix again exactly here): pending questions are
# few; the recent ones only explain a miss ("already answered by alice").
_PENDING_SCAN = 50  # pending questions of one id prefix (6+ characters): a handful
_RECENT_SCAN = 50


async def find_question(
    gate: QuestionLookup, *, channel: str, user_id: str, reference: str, team: str | None = None
) -> TapOutcome:
    """The question a typed ``reference`` (an id, or a prefix of one) names for this person.

    A full id names its request, whatever it is (:func:`~tapgate.decisions.taps.tap`
    then refuses what must be refused, and audits it). A prefix is looked up
    only among the *pending* questions this person may answer, so it can
    neither reach someone else's request nor reveal that one exists; two
    matches are ``ambiguous``, never a guess. With no pending match, the
    newest such question that is already decided is returned, only so the
    answer can be told "already answered by alice" rather than "not found".
    """
    approver = gate.directory.identify(channel, user_id, team)
    try:
        exact = await gate.get_request(reference)
    except RequestNotFound:
        pass
    else:
        return TapOutcome(kind="ready", approver=approver, request=exact, message="")
    if approver is None:
        return _no_match(reference, approver)

    def mine(request: Request) -> bool:
        return (
            texts.is_question(request)
            and request.id.startswith(reference)
            and approver in request.approvers
        )

    found = partial(gate.list_requests, tool=CONTACT_TOOL, id_prefix=reference)
    matches = [r for r in await found(status="pending", limit=_PENDING_SCAN) if mine(r)]
    if len(matches) > 1:
        message = texts.too_many_questions(reference)
        return TapOutcome(kind="ambiguous", approver=approver, message=message)
    if not matches:
        matches = [r for r in await found(limit=_RECENT_SCAN) if mine(r)][:1]
    if not matches:
        return _no_match(reference, approver)
    return TapOutcome(kind="ready", approver=approver, request=matches[0], message="")


def _no_match(reference: str, approver: str | None) -> TapOutcome:
    return TapOutcome(
        kind="not_found", approver=approver, message=texts.no_question_matches(reference)
    )


@dataclass(frozen=True, kw_only=True, slots=True)
class TypedAnswer:
    """What a typed answer came to: the reply, and the tap when one was made.

    ``reply`` is what to tell the approver (``None``: nothing, a redelivery);
    ``outcome`` is the tap's when the answer reached the gate (``None``:
    refused before it), for the channel's tap log, with the ``request_id``
    of the question it answered.
    """

    reply: str | None
    outcome: TapOutcome | None = None
    request_id: str = ""


_SILENT = TypedAnswer(reply=None)


async def answer_typed(
    gate: Gate, *, channel: str, user_id: str, reference: str, text: str, event: str
) -> TypedAnswer:
    """``answer <reference>: <text>`` typed by ``user_id`` on ``channel``, as event ``event``.

    Refusals made before the gate is asked claim the event themselves, so a
    redelivery says nothing twice; the answer's own event id is remembered
    with the decision by :func:`~tapgate.decisions.taps.tap`.
    """
    if not text or len(text) > ANSWER_MAX:
        if not await gate.remember_event(channel, event):
            return _SILENT
        return TypedAnswer(
            reply=texts.answer_too_long(ANSWER_MAX) if text else texts.answer_missing(reference)
        )
    found = await find_question(gate, channel=channel, user_id=user_id, reference=reference)
    if found.request is None:
        if not await gate.remember_event(channel, event):
            return _SILENT
        _log.info("%s answer by %s to %s: %s", channel, user_id, reference, found.kind)
        return TypedAnswer(reply=found.message)
    reply = Tap(channel=channel, user_id=user_id, action="reply", request_id=found.request.id)
    outcome = await tap(gate, reply, reason=text, event=event)
    said = None if outcome.kind == "duplicate" else outcome.message
    return TypedAnswer(reply=said, outcome=outcome, request_id=found.request.id)
