"""Every sentence a person who tapped is told, on every channel.

LINE replies, Slack ephemerals and modals, and the console all answer a tap
with these words, so a refusal reads the same wherever it happens and a new
surface (the web inbox) adds no wording of its own. What a tap *means* (who
may decide, what is refused and audited) is :mod:`tapgate.core.taps`.

A question's subject is agent text: in these one-line replies it is clipped,
control characters are dropped and credentials are masked by the one mask
(:mod:`tapgate.core.masking`).
"""

from __future__ import annotations

import unicodedata
from datetime import datetime

from tapgate.core.buttons import SHORT_ID_LENGTH
from tapgate.core.masking import mask_text
from tapgate.core.models import CONTACT_TOOL, Request

__all__ = [
    "NOT_APPROVER",
    "NOT_FOUND",
    "NOT_QUESTION",
    "already_message",
    "applied_message",
    "clock_time",
    "is_question",
    "no_question_matches",
    "short",
    "title",
    "too_many_questions",
]

NOT_APPROVER = "You are not an approver for this request."
NOT_FOUND = "This request does not exist (any more)."
NOT_QUESTION = "This request is not a question; use its Approve / Deny buttons."

_PAST = {"approved": "approved", "denied": "denied", "cancelled": "cancelled", "expired": "expired"}
_QUESTION_PAST = {**_PAST, "approved": "answered", "denied": "dismissed"}
_TITLE_MAX = 40


def is_question(request: Request) -> bool:
    """True for a question to a human (``CONTACT_TOOL``) rather than a tool call."""
    return request.tool == CONTACT_TOOL


def short(request_id: str) -> str:
    """The id as messages show it: enough to recognise, short enough to read."""
    return f"request {request_id[:SHORT_ID_LENGTH]}"


def clock_time(at: datetime | None) -> str:
    """``12:03 UTC``."""
    return f"{at:%H:%M} UTC" if at is not None else "an unknown time"


def title(request: Request) -> str:
    """What a one-line reply calls ``request``: its tool, or a question's tamed subject."""
    if not is_question(request):
        return request.tool
    subject = request.arguments.get("subject")
    if not isinstance(subject, str):
        return "question"
    words = [
        "".join(c for c in w if not unicodedata.category(c).startswith("C"))
        for w in subject.split()
    ]
    text = mask_text(" ".join(word for word in words if word))
    if len(text) > _TITLE_MAX:
        text = text[: _TITLE_MAX - 1] + "…"
    return text or "question"


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


def too_many_questions(reference: str) -> str:
    """A typed reference that names two open questions: never a guess."""
    return f"More than one open question starts with {reference}; tap Reply on the one you mean."


def no_question_matches(reference: str) -> str:
    """A typed reference that names none of this person's questions."""
    return f"No question for you matches {reference}; tap Reply on the question to answer it."
