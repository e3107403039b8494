"""A typed answer's reference turned into the one question it names.

LINE has no modal: an approver answers a question by typing
``answer <reference>: <text>`` (:func:`tapgate.decisions.buttons.parse_answer`),
where the reference is the question's id or a prefix of it. This module finds
the question; answering it is an ordinary tap (:func:`tapgate.decisions.taps.tap`),
which authorises and audits as for any other.
"""

from __future__ import annotations

from functools import partial

from tapgate.decisions.taps import TapOutcome
from tapgate.decisions.texts import is_question, no_question_matches, too_many_questions
from tapgate.errors import RequestNotFound
from tapgate.gate.gate import Gate
from tapgate.gate.models import CONTACT_TOOL, Request

__all__ = ["find_question"]

# Bounds of the queries that resolve a typed reference (tool and id prefix are
# matched in SQL; the prefix again exactly here): pending questions are
# few; the recent ones only explain a miss ("already answered by alice").
_PENDING_SCAN = 50  # pending questions of one id prefix (6+ characters): a handful
_RECENT_SCAN = 50


async def find_question(
    gate: Gate, *, channel: str, user_id: str, reference: str, team: str | None = None
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
            is_question(request)
            and request.id.startswith(reference)
            and approver in request.approvers
        )

    found = partial(gate.list_requests, tool=CONTACT_TOOL, id_prefix=reference)
    matches = [r for r in await found(status="pending", limit=_PENDING_SCAN) if mine(r)]
    if len(matches) > 1:
        message = too_many_questions(reference)
        return TapOutcome(kind="ambiguous", approver=approver, message=message)
    if not matches:
        matches = [r for r in await found(limit=_RECENT_SCAN) if mine(r)][:1]
    if not matches:
        return _no_match(reference, approver)
    return TapOutcome(kind="ready", approver=approver, request=matches[0], message="")


def _no_match(reference: str, approver: str | None) -> TapOutcome:
    return TapOutcome(kind="not_found", approver=approver, message=no_question_matches(reference))
