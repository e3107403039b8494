"""A tap on an approval button, from any platform, turned into a decision and a reply.

The LINE and Slack webhooks verify the platform's signature and parse the
payload; what a tap *means* is decided here, once: who tapped (the platform
user id must belong to a configured approver, and that approver must be one
of *this* request's approvers), what they asked for, and what to tell them.
Every refusal is audited by the gate and changes nothing.

Questions (``CONTACT_TOOL`` requests) are answered, not approved: ``reply``
approves with the answer as the reason, ``dismiss`` denies, and both are
refused for anything but a question, so a typed text can never approve a
tool call. :func:`reply_check` vets a Reply tap before a dialog or a
keyboard opens; :func:`find_question` turns the short reference of a typed
LINE answer into the one question it names.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Literal

from tapgate.core.actions import QUESTION_ACTIONS, SHORT_ID_LENGTH, TapAction
from tapgate.core.gate import Gate
from tapgate.core.models import CONTACT_TOOL, Request
from tapgate.errors import (
    AlreadyResolved,
    DuplicateEvent,
    NotAnApprover,
    RequestExpired,
    RequestNotFound,
)

__all__ = [
    "ANSWER_MAX",
    "TapOutcome",
    "already_message",
    "applied_message",
    "clock_time",
    "find_question",
    "is_question",
    "reply_check",
    "short",
    "tap",
    "title",
]

TapKind = Literal[
    "applied",
    "already",
    "expired",
    "not_approver",
    "not_found",
    "duplicate",
    "not_question",
    "ambiguous",
    "ready",
]

ANSWER_MAX = 2000
"""Longest answer accepted: plenty for an agent to act on, small for the audit log."""

NOT_APPROVER = "You are not an approver for this request."
NOT_FOUND = "This request does not exist (any more)."
NOT_QUESTION = "This request is not a question; use its Approve / Deny buttons."

_PAST = {"approved": "approved", "denied": "denied", "cancelled": "cancelled", "expired": "expired"}
_QUESTION_PAST = {**_PAST, "approved": "answered", "denied": "dismissed"}
_TITLE_MAX = 40
# Core cannot use the notifiers' masking, and a subject is agent text: in the
# one-line replies it is clipped, and any long unbroken run with a digit in
# it (the shape of every key, token and hash) is hidden.
_KEYLIKE = re.compile(r"\S{16,}")
_MASK = "********"
# Bounds of the queries that resolve a typed reference (tool and id prefix are
# matched in SQL; the prefix again exactly here): pending questions are
# few; the recent ones only explain a miss ("already answered by alice").
_PENDING_SCAN = 50  # pending questions of one id prefix (6+ characters): a handful
_RECENT_SCAN = 50


@dataclass(frozen=True, kw_only=True, slots=True)
class TapOutcome:
    """What a tap did, and the sentence to show the person who tapped.

    ``ready`` (from :func:`reply_check` / :func:`find_question` only) means
    nothing happened yet and ``request`` may be answered by this person.
    """

    kind: TapKind
    message: str
    approver: str | None = None
    request: Request | None = None

    @property
    def applied(self) -> bool:
        """True when this tap decided the request."""
        return self.kind == "applied"


def is_question(request: Request) -> bool:
    """True for a question to a human (``CONTACT_TOOL``) rather than a tool call."""
    return request.tool == CONTACT_TOOL


async def tap(
    gate: Gate,
    *,
    channel: str,
    user_id: str,
    action: TapAction,
    request_id: str,
    team: str | None = None,
    reason: str | None = None,
    event: str | None = None,
) -> TapOutcome:
    """Resolve ``request_id`` as the approver behind ``(channel, user_id)`` asks.

    An unknown user id is tried as ``channel:user_id`` so the refusal is
    audited like any other; an agent's token never reaches this function.
    ``event`` is the platform's event id: a redelivery of a handled event is
    a ``duplicate`` outcome with nothing done and nothing to say. ``reply``
    needs the answer as ``reason`` (``ValueError`` without one).
    """
    if action == "reply" and not (reason and reason.strip()):
        raise ValueError("a reply needs the answer as its reason")
    approver = gate.directory.identify(channel, user_id, team)
    actor = approver or f"{channel}:{user_id}"
    if action in QUESTION_ACTIONS:
        refused = await _not_a_question(
            gate,
            request_id,
            actor=actor,
            channel=channel,
            user_id=user_id,
            event=event,
            action=action,
        )
        if refused is not None:
            message = NOT_QUESTION if refused == "not_question" else ""
            return TapOutcome(kind=refused, approver=approver, message=message)
    verdict: Literal["approve", "deny"] = "deny" if action in ("deny", "dismiss") else "approve"
    try:
        request = await gate.resolve(
            request_id,
            verdict,
            by=actor,
            reason=reason,
            scope="session" if action == "approve_session" else "once",
            detail={"channel": channel, "user_id": user_id},
            event=(channel, event) if event is not None else None,
        )
    except (DuplicateEvent, NotAnApprover, RequestNotFound, RequestExpired, AlreadyResolved) as e:
        return await _refusal(gate, request_id, approver, e)
    return TapOutcome(
        kind="applied", approver=approver, request=request, message=applied_message(request)
    )


async def _refusal(
    gate: Gate, request_id: str, approver: str | None, error: Exception
) -> TapOutcome:
    """The outcome of a tap the gate refused (and audited), with its sentence."""
    if isinstance(error, DuplicateEvent):
        return TapOutcome(kind="duplicate", approver=approver, message="")
    if isinstance(error, NotAnApprover):
        return TapOutcome(kind="not_approver", approver=approver, message=NOT_APPROVER)
    if isinstance(error, RequestNotFound):
        return TapOutcome(kind="not_found", approver=approver, message=NOT_FOUND)
    current = await gate.status(request_id)
    status = "expired" if isinstance(error, RequestExpired) else current.status
    return TapOutcome(
        kind="expired" if status == "expired" else "already",
        approver=approver,
        request=current,
        message=already_message(current, status),
    )


async def _not_a_question(
    gate: Gate,
    request_id: str,
    *,
    actor: str,
    channel: str,
    user_id: str,
    event: str | None,
    action: TapAction,
) -> Literal["not_question", "duplicate"] | None:
    """Refuse ``reply`` / ``dismiss`` on a tool call: audited, the event remembered.

    ``None`` lets the resolve go ahead (a question, or a missing request,
    which the resolve itself answers). The tool of a request never changes,
    so reading it before the compare-and-set is race-free.
    """
    try:
        request = await gate.status(request_id)
    except RequestNotFound:
        return None
    if is_question(request):
        return None
    now = gate.clock.now()
    if event is not None and not await gate.store.remember_event(channel, event, now):
        return "duplicate"
    wanted = "approved" if action == "reply" else "denied"
    await _audit_refused(
        gate,
        request_id,
        actor=actor,
        channel=channel,
        user_id=user_id,
        wanted=wanted,
        why="not a question",
    )
    return "not_question"


async def reply_check(
    gate: Gate, *, channel: str, user_id: str, request_id: str, team: str | None = None
) -> TapOutcome:
    """May ``(channel, user_id)`` answer ``request_id`` now? ``ready`` or why not.

    Run when Reply is tapped, before Slack's dialog or LINE's keyboard opens,
    so nobody types an answer that will be refused. Decides nothing; the
    answer itself goes through :func:`tap`, which checks everything again.
    """
    approver = gate.directory.identify(channel, user_id, team)
    try:
        request = await gate.status(request_id)
    except RequestNotFound:
        return TapOutcome(kind="not_found", approver=approver, message=NOT_FOUND)
    if not is_question(request):
        return TapOutcome(kind="not_question", approver=approver, message=NOT_QUESTION)
    if not request.is_pending:
        kind: TapKind = "expired" if request.status == "expired" else "already"
        message = already_message(request, request.status)
        return TapOutcome(kind=kind, approver=approver, request=request, message=message)
    if request.expires_at <= gate.clock.now():
        message = already_message(request, "expired")
        return TapOutcome(kind="expired", approver=approver, request=request, message=message)
    if approver is None or approver not in request.approvers:
        actor = approver or f"{channel}:{user_id}"
        await _audit_refused(
            gate,
            request_id,
            actor=actor,
            channel=channel,
            user_id=user_id,
            wanted="approved",
            why="not an approver",
        )
        return TapOutcome(kind="not_approver", approver=approver, message=NOT_APPROVER)
    return TapOutcome(kind="ready", approver=approver, request=request, message="")


async def find_question(
    gate: Gate, *, channel: str, user_id: str, reference: str, team: str | None = None
) -> TapOutcome:
    """The question a typed ``reference`` (an id, or a prefix of one) names for this person.

    A full id names its request, whatever it is (:func:`tap` then refuses
    what must be refused, and audits it). A prefix is looked up only among
    the *pending* questions this person may answer, so it can neither reach
    someone else's request nor reveal that one exists; two matches are
    ``ambiguous``, never a guess. With no pending match, the newest such
    question that is already decided is returned, only so the answer can be
    told "already answered by alice" rather than "not found".
    """
    approver = gate.directory.identify(channel, user_id, team)
    try:
        exact = await gate.status(reference)
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

    found = partial(gate.store.list_requests, tool=CONTACT_TOOL, id_prefix=reference)
    matches = [r for r in await found(status="pending", limit=_PENDING_SCAN) if mine(r)]
    if len(matches) > 1:
        message = (
            f"More than one open question starts with {reference}; tap Reply on the one you mean."
        )
        return TapOutcome(kind="ambiguous", approver=approver, message=message)
    if not matches:
        matches = [r for r in await found(limit=_RECENT_SCAN) if mine(r)][:1]
    if not matches:
        return _no_match(reference, approver)
    return TapOutcome(kind="ready", approver=approver, request=matches[0], message="")


def _no_match(reference: str, approver: str | None) -> TapOutcome:
    message = f"No question for you matches {reference}; tap Reply on the question to answer it."
    return TapOutcome(kind="not_found", approver=approver, message=message)


async def _audit_refused(
    gate: Gate,
    request_id: str,
    *,
    actor: str,
    channel: str,
    user_id: str,
    wanted: str,
    why: str,
) -> None:
    """Audit a refusal decided here, as the store audits the ones it decides."""
    await gate.store.record(
        "refused",
        request_id=request_id,
        actor=actor,
        now=gate.clock.now(),
        detail={"channel": channel, "user_id": user_id, "wanted": wanted, "why": why},
    )


def short(request_id: str) -> str:
    """The id as messages show it: enough to recognise, short enough to read."""
    return f"request {request_id[:SHORT_ID_LENGTH]}"


def clock_time(at: datetime | None) -> str:
    """``12:03 UTC``."""
    return f"{at:%H:%M} UTC" if at is not None else "an unknown time"


def title(request: Request) -> str:
    """What a one-line reply calls ``request``: its tool, or a question's subject.

    A subject is agent text: clipped to one short line, control characters
    dropped, key-like runs hidden (see ``_KEYLIKE``). ``question`` without one.
    """
    if not is_question(request):
        return request.tool
    subject = request.arguments.get("subject")
    if not isinstance(subject, str):
        return "question"
    words = [
        "".join(c for c in w if not unicodedata.category(c).startswith("C"))
        for w in subject.split()
    ]
    text = " ".join(_MASK if _keylike(word) else word for word in words if word)
    if len(text) > _TITLE_MAX:
        text = text[: _TITLE_MAX - 1] + "…"
    return text or "question"


def _keylike(word: str) -> bool:
    return _KEYLIKE.fullmatch(word) is not None and any(c.isdigit() for c in word)


def applied_message(request: Request) -> str:
    """ "Approved - deploy_prod (request 3fA9xxxx)"; "Answer sent - …" for a question."""
    if is_question(request):
        verb = "Answer sent" if request.status == "approved" else "Dismissed"
        return f"{verb} - {title(request)} ({short(request.id)})"
    verb = "Approved" if request.status == "approved" else "Denied"
    scope = " for this session" if request.scope == "session" else ""
    return f"{verb}{scope} - {request.tool} ({short(request.id)})"


def already_message(request: Request, status: str) -> str:
    """ "Already approved by alice at 12:03" for a tap that came second."""
    if status == "expired":
        return f"This request expired - {title(request)} ({short(request.id)})."
    past = (_QUESTION_PAST if is_question(request) else _PAST).get(status, status)
    by = f" by {request.resolved_by}" if request.resolved_by else ""
    return f"Already {past}{by} at {clock_time(request.resolved_at)} - {title(request)}."
