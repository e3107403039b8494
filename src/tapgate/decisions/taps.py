"""What a tap means, for every channel: who tapped, may they, what happened, what is audited.

The LINE and Slack webhooks (and any later surface) verify the platform's
signature and parse the payload; everything after that is decided here, once:

- **identify**: the platform user id must belong to a configured approver
  (:meth:`~tapgate.gate.directory.Directory.identify`); an unknown id acts as
  ``channel:user_id`` so its refusal is audited like any other;
- **authorise**: that approver must be one of *this* request's approvers. For
  a decision the check is part of the gate's compare-and-set (:func:`tap`), so
  authorisation and decision cannot drift apart; before a dialog opens it is
  checked here (:func:`check`) so nobody types a reason that will be refused;
- **refuse**: every refusal is audited (by the store inside the transaction,
  or by :mod:`tapgate.decisions.refusals` for the ones decided before it) and
  answered with the words of :mod:`tapgate.decisions.texts`; a refused tap
  carries the request as the refusing transaction saw it, never a second read.

A batch card's own buttons ("Approve all", "Deny all", "Allow all for
session") are a :class:`BatchTap`, decided by :func:`tap_batch` and checked
by :func:`check_batch_tap` (:mod:`tapgate.decisions.batch_taps`). The records a
tap is made of (:class:`Tap`, :class:`BatchTap`, :class:`TapOutcome`) live in
:mod:`tapgate.decisions.tap_records`. Surfaces import all of these from here: this
module is the one door a tap goes through.

Questions (``CONTACT_TOOL`` requests) are answered, not approved: ``reply``
approves with the answer as the reason, ``dismiss`` denies, and both are
refused for anything but a question, so a typed text can never approve a
tool call. Typed LINE answers name their question by a short reference:
:mod:`tapgate.decisions.questions` finds it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from tapgate.decisions.batch_taps import check_batch_tap, tap_batch
from tapgate.decisions.buttons import QUESTION_ACTIONS, TapAction
from tapgate.decisions.quorum import Progress, approve
from tapgate.decisions.refusals import audit_refused, not_a_question, refusal, refuse
from tapgate.decisions.remember import reach
from tapgate.decisions.tap_records import (
    BatchTap,
    Tap,
    TapKind,
    TapOutcome,
    audit_detail,
    identify,
)
from tapgate.decisions.texts import (
    NOT_APPROVER,
    NOT_FOUND,
    NOT_QUESTION,
    NOT_REMEMBERED,
    SELF_APPROVAL,
    already_message,
    applied_message,
    counted_message,
    is_question,
    partial_message,
)
from tapgate.errors import (
    AlreadyResolved,
    DuplicateEvent,
    NotAnApprover,
    RequestExpired,
    RequestNotFound,
)
from tapgate.gate.gate import Gate
from tapgate.gate.models import Request, Scope

__all__ = [
    "ANSWER_MAX",
    "BatchTap",
    "Tap",
    "TapKind",
    "TapOutcome",
    "check",
    "check_batch_tap",
    "refuse",
    "tap",
    "tap_batch",
]

_SCOPE_OF: dict[TapAction, Scope] = {"approve_session": "session", "approve_always": "always"}

ANSWER_MAX = 2000
"""Longest answer accepted: plenty for an agent to act on, small for the audit log."""


async def tap(
    gate: Gate,
    answer: Tap,
    *,
    reason: str | None = None,
    event: str | None = None,
    edited: Mapping[str, Any] | None = None,
    detail: Mapping[str, Any] | None = None,
) -> TapOutcome:
    """Resolve the request as the approver behind ``answer``'s ids asks.

    ``event`` is the platform's event id: a redelivery of a handled event is
    a ``duplicate`` outcome with nothing done and nothing to say. ``reply``
    needs the answer as ``reason`` (``ValueError`` without one). ``edited``
    (an approval only) approves those arguments instead of the agent's; the
    caller (:func:`tapgate.decisions.edits.approve_edit`) has judged them, and
    ``detail`` adds what the audit line says about the edit.
    """
    action = answer.action
    if action == "reply" and not (reason and reason.strip()):
        raise ValueError("a reply needs the answer as its reason")
    tapper = identify(gate, answer)
    if action in QUESTION_ACTIONS:
        refused = await not_a_question(tapper, event=event)
        if refused is not None:
            return refused
    verdict: Literal["approve", "deny"] = "deny" if action in ("deny", "dismiss") else "approve"
    remembered = await reach(gate, answer.request_id, _SCOPE_OF.get(action, "once"))
    if remembered.refused:  # a stale or forged button: the policy no longer lets this be remembered
        await audit_refused(tapper, why="remembering not allowed")
        return TapOutcome(kind="not_remembered", approver=tapper.approver, message=NOT_REMEMBERED)
    how: dict[str, Any] = {
        "by": tapper.actor,
        "reason": reason,
        "detail": {**audit_detail(tapper), **(detail or {})},
        "event": (answer.channel, event) if event is not None else None,
    }
    try:
        if verdict == "approve":  # counted towards the quorum (core.quorum)
            request: Request | Progress = await approve(
                gate,
                answer.request_id,
                scope=remembered.scope,
                grant_ttl=remembered.ttl,
                grant_uses=remembered.uses,
                edited=edited,
                **how,
            )
        else:  # one deny denies
            request = await gate.resolve(answer.request_id, "deny", **how)
    except (DuplicateEvent, NotAnApprover, RequestNotFound, RequestExpired, AlreadyResolved) as e:
        return refusal(tapper.approver, e)
    if isinstance(request, Progress):
        return _progress(tapper.approver, request)
    return TapOutcome(
        kind="applied", approver=tapper.approver, request=request, message=applied_message(request)
    )


async def check(gate: Gate, answer: Tap) -> TapOutcome:
    """May ``answer``'s tapper take its action on its request now? ``ready`` or why not.

    Run before a dialog opens (Slack's deny reason, a question's answer,
    LINE's keyboard), so nobody types text that will be refused. Decides
    nothing; the answer itself goes through :func:`tap`, which checks
    everything again inside the compare-and-set. A refusal for not being an
    approver is audited here, as the store audits the ones it decides.
    """
    tapper = identify(gate, answer)
    approver = tapper.approver
    try:
        request = await gate.get_request(answer.request_id)
    except RequestNotFound:
        return TapOutcome(kind="not_found", approver=approver, message=NOT_FOUND)
    if answer.action in QUESTION_ACTIONS and not is_question(request):
        return TapOutcome(kind="not_question", approver=approver, message=NOT_QUESTION)
    if not request.is_pending or request.expires_at <= gate.clock.now():
        status = request.status if not request.is_pending else "expired"
        kind: TapKind = "expired" if status == "expired" else "already"
        message = already_message(request, status)
        return TapOutcome(kind=kind, approver=approver, request=request, message=message)
    if approver is None or approver not in request.approvers:
        await audit_refused(tapper, why="not an approver")
        return TapOutcome(kind="not_approver", approver=approver, message=NOT_APPROVER)
    return TapOutcome(kind="ready", approver=approver, request=request, message="")


def _progress(approver: str | None, progress: Progress) -> TapOutcome:
    """The outcome of an approval that decided nothing: counted, counted before, or refused."""
    request = progress.request
    if progress.kind == "self_approval":
        return TapOutcome(kind="self_approval", approver=approver, message=SELF_APPROVAL)
    message = (partial_message if progress.kind == "partial" else counted_message)(request)
    return TapOutcome(kind=progress.kind, approver=approver, request=request, message=message)
