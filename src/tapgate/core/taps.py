"""What a tap means, for every channel: who tapped, may they, what happened, what is audited.

The LINE and Slack webhooks (and any later surface) verify the platform's
signature and parse the payload; everything after that is decided here, once:

- **identify**: the platform user id must belong to a configured approver
  (:meth:`~tapgate.core.directory.Directory.identify`); an unknown id acts as
  ``channel:user_id`` so its refusal is audited like any other;
- **authorise**: that approver must be one of *this* request's approvers. For
  a decision the check is part of the gate's compare-and-set (:func:`tap`), so
  authorisation and decision cannot drift apart; before a dialog opens it is
  checked here (:func:`check`) so nobody types a reason that will be refused;
- **refuse**: every refusal is audited (by the store inside the transaction,
  or by :func:`_audit_refused` for the ones decided here) and answered with
  the words of :mod:`tapgate.core.tap_texts`; a refused tap carries the
  request as the refusing transaction saw it, never a second read.

A batch card's own buttons ("Approve all", "Deny all", "Allow all for
session") are a :class:`BatchTap`: :func:`tap_batch` decides every
still-pending call of the batch in one transaction, each call authorised
against *its own* approvers and refused (and audited) on its own, so an
"Approve all" can never decide a call its tapper could not have tapped;
:func:`check_batch_tap` is its :func:`check` before the deny-reason dialog.

Questions (``CONTACT_TOOL`` requests) are answered, not approved: ``reply``
approves with the answer as the reason, ``dismiss`` denies, and both are
refused for anything but a question, so a typed text can never approve a
tool call. Typed LINE answers name their question by a short reference:
:mod:`tapgate.core.questions` finds it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from tapgate.core.always import reach
from tapgate.core.batching import read_batch, resolve_batch
from tapgate.core.buttons import QUESTION_ACTIONS, BatchAction, TapAction
from tapgate.core.gate import Gate
from tapgate.core.models import Request, Scope
from tapgate.core.quorum import Progress, approve
from tapgate.core.store import Transition
from tapgate.core.tap_texts import (
    BATCH_NOT_FOUND,
    NOT_APPROVER,
    NOT_APPROVER_BATCH,
    NOT_FOUND,
    NOT_QUESTION,
    NOT_REMEMBERED,
    SELF_APPROVAL,
    already_message,
    applied_message,
    batch_message,
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

TapKind = Literal[
    "applied",
    "already",
    "expired",
    "not_approver",
    "not_found",
    "duplicate",
    "not_question",
    "not_remembered",
    "ambiguous",
    "ready",
    "partial",
    "counted",
    "self_approval",
]

_SCOPE_OF: dict[TapAction, Scope] = {"approve_session": "session", "approve_always": "always"}

ANSWER_MAX = 2000
"""Longest answer accepted: plenty for an agent to act on, small for the audit log."""


@dataclass(frozen=True, kw_only=True, slots=True)
class TapOutcome:
    """What a tap did, and the sentence to show the person who tapped.

    ``ready`` (from :func:`check` and the question lookup only) means nothing
    happened yet and ``request`` may be acted on by this person. ``partial``: counted,
    the quorum waits for more; ``counted``: counted before; ``self_approval``:
    refused, the tapper owns the agent.
    """

    kind: TapKind
    message: str
    approver: str | None = None
    request: Request | None = None
    requests: tuple[Request, ...] = ()
    """A batch tap's calls as it left them (``ready``: the open ones the tapper decides)."""

    @property
    def applied(self) -> bool:
        """True when this tap decided the request."""
        return self.kind == "applied"


@dataclass(frozen=True, kw_only=True, slots=True)
class _Tapped:
    """Who answered: the platform's ids as they arrived, not trusted yet.

    Surfaces build a :class:`Tap` or :class:`BatchTap` after verifying the
    platform's signature; the user id is matched against the directory here,
    and the tapper against the request's approvers inside the decision.
    ``team`` is the tapper's home Slack workspace, ``None`` elsewhere.
    """

    channel: str
    user_id: str
    team: str | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class Tap(_Tapped):
    """One answer on one request: approve, deny, allow for the session, reply..."""

    action: TapAction
    request_id: str


@dataclass(frozen=True, kw_only=True, slots=True)
class BatchTap(_Tapped):
    """One tap on a batch card's own buttons (approve all, deny all...)."""

    action: BatchAction
    batch_id: str


@dataclass(frozen=True, kw_only=True, slots=True)
class _Tapper:
    """A :class:`Tap` (or :class:`BatchTap`) with the approver its ids name, if any."""

    gate: Gate
    tap: Tap | BatchTap
    approver: str | None

    @property
    def actor(self) -> str:
        """Who the audit names: the approver, or ``channel:user_id`` for a stranger."""
        return self.approver or f"{self.tap.channel}:{self.tap.user_id}"


def _identify(gate: Gate, tap: Tap | BatchTap) -> _Tapper:
    approver = gate.directory.identify(tap.channel, tap.user_id, tap.team)
    return _Tapper(gate=gate, tap=tap, approver=approver)


async def tap(
    gate: Gate, answer: Tap, *, reason: str | None = None, event: str | None = None
) -> TapOutcome:
    """Resolve the request as the approver behind ``answer``'s ids asks.

    ``event`` is the platform's event id: a redelivery of a handled event is
    a ``duplicate`` outcome with nothing done and nothing to say. ``reply``
    needs the answer as ``reason`` (``ValueError`` without one).
    """
    action = answer.action
    if action == "reply" and not (reason and reason.strip()):
        raise ValueError("a reply needs the answer as its reason")
    tapper = _identify(gate, answer)
    if action in QUESTION_ACTIONS:
        refused = await _not_a_question(tapper, event=event)
        if refused is not None:
            return refused
    verdict: Literal["approve", "deny"] = "deny" if action in ("deny", "dismiss") else "approve"
    remembered = await reach(gate, answer.request_id, _SCOPE_OF.get(action, "once"))
    if remembered.refused:  # a stale or forged button: the policy no longer lets this be remembered
        await _audit_refused(tapper, why="remembering not allowed")
        return TapOutcome(kind="not_remembered", approver=tapper.approver, message=NOT_REMEMBERED)
    how: dict[str, Any] = {
        "by": tapper.actor,
        "reason": reason,
        "detail": _detail(tapper),
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
                **how,
            )
        else:  # one deny denies
            request = await gate.resolve(answer.request_id, "deny", **how)
    except (DuplicateEvent, NotAnApprover, RequestNotFound, RequestExpired, AlreadyResolved) as e:
        return _refusal(tapper.approver, e)
    if isinstance(request, Progress):
        return _progress(tapper.approver, request)
    return TapOutcome(
        kind="applied", approver=tapper.approver, request=request, message=applied_message(request)
    )


async def tap_batch(
    gate: Gate, answer: BatchTap, *, reason: str | None = None, event: str | None = None
) -> TapOutcome:
    """Decide every still-pending call of the batch as the approver behind ``answer`` asks.

    One transaction, one compare-and-set per pending call (DESIGN.md
    decision 11); each checks the tapper against that call's approvers, so
    a stranger's "Approve all" changes nothing and is audited per call.
    Calls decided meanwhile stay decided and the sentence says so.
    """
    tapper = _identify(gate, answer)
    scope: Scope = "session" if answer.action == "approve_all_session" else "once"
    try:
        transitions = await resolve_batch(
            gate,
            answer.batch_id,
            "deny" if answer.action == "deny_all" else "approve",
            by=tapper.actor,
            scope=scope,
            reason=reason,
            detail=_detail(tapper),
            event=(answer.channel, event) if event is not None else None,
        )
    except DuplicateEvent:
        return TapOutcome(kind="duplicate", approver=tapper.approver, message="")
    except RequestNotFound:
        return TapOutcome(kind="not_found", approver=tapper.approver, message=BATCH_NOT_FOUND)
    return _batch_outcome(tapper.approver, answer, transitions)


def _batch_outcome(
    approver: str | None, answer: BatchTap, transitions: list[Transition]
) -> TapOutcome:
    """Sum up a batch tap: ``applied`` if it decided anything, else why not, in one sentence."""
    current = tuple(t.request for t in transitions if t.request is not None)
    applied = [t.request for t in transitions if t.outcome == "applied" and t.request]
    late = [t.request for t in transitions if t.outcome in ("final", "expired") and t.request]
    not_yours = sum(t.outcome == "unauthorized" for t in transitions)
    if not applied and not late:
        message = NOT_APPROVER_BATCH if not_yours else BATCH_NOT_FOUND
        kind: TapKind = "not_approver" if not_yours else "not_found"
        return TapOutcome(kind=kind, approver=approver, message=message, requests=current)
    verb = {"approve_all": "approved", "deny_all": "denied"}.get(
        answer.action, "approved for this session"
    )
    message = batch_message(
        answer.batch_id, verb=verb, applied=applied, late=late, not_yours=not_yours
    )
    kind = "applied" if applied else "already"
    return TapOutcome(kind=kind, approver=approver, message=message, requests=current)


async def check_batch_tap(gate: Gate, answer: BatchTap) -> TapOutcome:
    """May ``answer``'s tapper decide any open call of the batch now? ``ready`` or why not.

    :func:`check` for a batch, run before the "Deny all" reason dialog opens;
    ``requests`` of a ``ready`` outcome are the open calls this tapper
    decides. A tapper who is an approver of none is audited once per open call.
    """
    tapper = _identify(gate, answer)
    try:
        state = await read_batch(gate, answer.batch_id)
    except RequestNotFound:
        return TapOutcome(kind="not_found", approver=tapper.approver, message=BATCH_NOT_FOUND)
    members = [r for r in state.requests.values() if r.batch_id == answer.batch_id]
    now = gate.clock.now()
    still_open = [r for r in members if r.is_pending and r.expires_at > now]
    if not still_open:
        verb = "denied" if answer.action == "deny_all" else "approved"
        message = batch_message(answer.batch_id, verb=verb, applied=[], late=members)
        return TapOutcome(kind="already", approver=tapper.approver, message=message)
    mine = tuple(r for r in still_open if tapper.approver in r.approvers)
    if not mine:
        for request in still_open:
            await _audit_refused(tapper, why="not an approver", request_id=request.id)
        return TapOutcome(kind="not_approver", approver=tapper.approver, message=NOT_APPROVER_BATCH)
    return TapOutcome(kind="ready", approver=tapper.approver, message="", requests=mine)


async def check(gate: Gate, answer: Tap) -> TapOutcome:
    """May ``answer``'s tapper take its action on its request now? ``ready`` or why not.

    Run before a dialog opens (Slack's deny reason, a question's answer,
    LINE's keyboard), so nobody types text that will be refused. Decides
    nothing; the answer itself goes through :func:`tap`, which checks
    everything again inside the compare-and-set. A refusal for not being an
    approver is audited here, as the store audits the ones it decides.
    """
    tapper = _identify(gate, answer)
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
        await _audit_refused(tapper, why="not an approver")
        return TapOutcome(kind="not_approver", approver=approver, message=NOT_APPROVER)
    return TapOutcome(kind="ready", approver=approver, request=request, message="")


async def refuse(
    gate: Gate, answer: Tap | BatchTap, *, why: str, event: str | None = None
) -> TapOutcome:
    """Refuse a tap for a reason only the surface can see (another Slack workspace).

    Audited with ``why``; the tapper is told they are not an approver, which
    is what such a tap amounts to. With ``event``, the event id is remembered
    first, so a replayed or redelivered refusal is a silent ``duplicate``.
    """
    tapper = _identify(gate, answer)
    if event is not None and not await gate.remember_event(answer.channel, event):
        return TapOutcome(kind="duplicate", approver=tapper.approver, message="")
    await _audit_refused(tapper, why=why)
    return TapOutcome(kind="not_approver", approver=tapper.approver, message=NOT_APPROVER)


def _progress(approver: str | None, progress: Progress) -> TapOutcome:
    """The outcome of an approval that decided nothing: counted, counted before, or refused."""
    request = progress.request
    if progress.kind == "self_approval":
        return TapOutcome(kind="self_approval", approver=approver, message=SELF_APPROVAL)
    message = (partial_message if progress.kind == "partial" else counted_message)(request)
    return TapOutcome(kind=progress.kind, approver=approver, request=request, message=message)


def _refusal(approver: str | None, error: Exception) -> TapOutcome:
    """The outcome of a tap the gate refused (and audited), with its sentence."""
    if isinstance(error, DuplicateEvent):
        return TapOutcome(kind="duplicate", approver=approver, message="")
    if isinstance(error, NotAnApprover):
        return TapOutcome(kind="not_approver", approver=approver, message=NOT_APPROVER)
    if isinstance(error, RequestNotFound):
        return TapOutcome(kind="not_found", approver=approver, message=NOT_FOUND)
    assert isinstance(error, RequestExpired | AlreadyResolved)
    current = error.request
    assert isinstance(current, Request)  # the gate always hands over what the transaction saw
    status = "expired" if isinstance(error, RequestExpired) else current.status
    return TapOutcome(
        kind="expired" if status == "expired" else "already",
        approver=approver,
        request=current,
        message=already_message(current, status),
    )


async def _not_a_question(tapper: _Tapper, *, event: str | None) -> TapOutcome | None:
    """Refuse ``reply`` / ``dismiss`` on a tool call: audited, the event remembered.

    ``None`` lets the resolve go ahead (a question, or a missing request,
    which the resolve itself answers). The tool of a request never changes,
    so reading it before the compare-and-set is race-free.
    """
    gate = tapper.gate
    assert isinstance(tapper.tap, Tap)
    try:
        request = await gate.get_request(tapper.tap.request_id)
    except RequestNotFound:
        return None
    if is_question(request):
        return None
    if event is not None and not await gate.remember_event(tapper.tap.channel, event):
        return TapOutcome(kind="duplicate", approver=tapper.approver, message="")
    await _audit_refused(tapper, why="not a question")
    return TapOutcome(kind="not_question", approver=tapper.approver, message=NOT_QUESTION)


def _detail(tapper: _Tapper) -> dict[str, str]:
    """Where a tap came from, as the audit records it."""
    detail = {"channel": tapper.tap.channel, "user_id": tapper.tap.user_id}
    if tapper.tap.team is not None:
        detail["team"] = tapper.tap.team
    return detail


async def _audit_refused(tapper: _Tapper, *, why: str, request_id: str | None = None) -> None:
    """Audit a refusal decided here, as the store audits the ones it decides.

    A batch tap names the call it was refused on (``request_id``) and its batch.
    """
    answer = tapper.tap
    wanted = "denied" if answer.action in ("deny", "dismiss", "deny_all") else "approved"
    if isinstance(answer, BatchTap):
        target, extra = request_id or answer.batch_id, {"batch": answer.batch_id}
    else:
        target, extra = answer.request_id, {}
    await tapper.gate.record_refusal(
        target,
        actor=tapper.actor,
        detail={**_detail(tapper), **extra, "wanted": wanted, "why": why},
    )
