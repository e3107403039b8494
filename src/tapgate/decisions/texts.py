"""Every sentence a person who tapped is told, on every channel.

LINE replies, Slack ephemerals and modals, and the console all answer a tap
with these words, so a refusal reads the same wherever it happens and a new
surface (the web inbox) adds no wording of its own. What a tap *means* (who
may decide, what is refused and audited) is :mod:`tapgate.decisions.taps`.

A question's subject is agent text: in these one-line replies it is clipped,
control characters are dropped and credentials are masked by the one mask
(:mod:`tapgate.policy.masking`).
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Sequence
from datetime import datetime

from tapgate.decisions.buttons import SHORT_ID_LENGTH, answer_prefill
from tapgate.gate.models import CONTACT_TOOL, Grant, Request
from tapgate.policy.masking import clean_name, mask_text

__all__ = [
    "ASK_REASON",
    "BATCH_NOT_FOUND",
    "EDIT_IN_WEB_INBOX",
    "EDIT_KEEP_MASKED",
    "GRANT_GONE",
    "NOT_APPROVER",
    "NOT_APPROVER_BATCH",
    "NOT_FOUND",
    "NOT_GRANT_OWNER",
    "NOT_KNOWN",
    "NOT_QUESTION",
    "NOT_REMEMBERED",
    "NO_GRANTS",
    "NO_INBOX",
    "NO_INBOX_FOR_STRANGERS",
    "NO_LONGER_VALID",
    "REASON_SKIPPED",
    "SELF_APPROVAL",
    "TYPE_ANSWER",
    "already_message",
    "always_label",
    "answer_hint",
    "answer_missing",
    "answer_too_long",
    "applied_message",
    "ask_reason_message",
    "batch_message",
    "clock_time",
    "counted_message",
    "duration_text",
    "edit_denied",
    "edited_reason",
    "grant_line",
    "grants_heading",
    "inbox_link_message",
    "is_question",
    "no_question_matches",
    "partial_message",
    "progress",
    "reason_too_long",
    "revoked_message",
    "session_label",
    "short",
    "title",
    "too_many_questions",
    "tool_name",
]

NOT_APPROVER = "You are not an approver for this request."
NOT_FOUND = "This request does not exist (any more)."
NOT_QUESTION = "This request is not a question; use its Approve / Deny buttons."
NOT_APPROVER_BATCH = "You are not an approver for any open call of this batch."
BATCH_NOT_FOUND = "This batch does not exist (any more)."
SELF_APPROVAL = (
    "You own this agent, so you cannot approve its calls: another approver must. "
    "(You can still deny.)"
)
NOT_REMEMBERED = "This answer cannot be remembered for this tool; approve this call only."
NO_GRANTS = "You have no active grants."
NOT_GRANT_OWNER = "Only the approver who made a grant can revoke it from the chat."
GRANT_GONE = "That grant does not exist or was already revoked."
NOT_KNOWN = "tapgate does not know you as an approver, so you have no grants to list or revoke."
ASK_REASON = "Type the reason (or 'skip')"
NO_INBOX = "The web inbox needs server.public_url in tapgate.yaml; ask the operator."
NO_INBOX_FOR_STRANGERS = "Only configured approvers have an inbox."
NO_LONGER_VALID = "This button is no longer valid."
TYPE_ANSWER = "Type your answer and send it."
REASON_SKIPPED = "skip"
"""What an approver types to deny without a reason (any case)."""

EDIT_IN_WEB_INBOX = "To edit this call before approving it, open it in the web inbox (/inbox)."
"""LINE has no dialogs: its cards say where edits are made (one line)."""
EDIT_KEEP_MASKED = (
    "This value hides a secret: leave it exactly as shown to keep it, or type the whole new value."
)

_PAST = {"approved": "approved", "denied": "denied", "cancelled": "cancelled", "expired": "expired"}
_QUESTION_PAST = {**_PAST, "approved": "answered", "denied": "dismissed"}
_TITLE_MAX = 40
_REASON_SHOWN = 200


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
        return tool_name(request)
    subject = request.arguments.get("subject")
    if not isinstance(subject, str):
        return "question"
    return _one_line(subject, _TITLE_MAX) or "question"


def tool_name(request: Request) -> str:
    """The tool as the card shows it: masked, invisible characters made visible.

    The name is the agent's text like its arguments; a reply or a dialog that
    showed it raw would show what the card hid.
    """
    return clean_name(request.tool)


def _one_line(text: str, limit: int) -> str:
    """Hostile text for a one-line reply: control characters dropped, masked, clipped."""
    words = [
        "".join(c for c in w if not unicodedata.category(c).startswith("C")) for w in text.split()
    ]
    shown = mask_text(" ".join(word for word in words if word))
    return shown[: limit - 1] + "…" if len(shown) > limit else shown


def applied_message(request: Request) -> str:
    """ "Approved - deploy_prod (request 3fA9xxxx)"; "Answer sent - …" for a question."""
    if is_question(request):
        verb = "Answer sent" if request.status == "approved" else "Dismissed"
        return f"{verb} - {title(request)} ({short(request.id)})"
    verb = "Approved" if request.status == "approved" else "Denied"
    scope = {"session": " for this session", "always": " always"}.get(request.scope or "", "")
    said = ""
    if request.status == "denied" and request.resolution_reason:  # the approver's own words
        said = f": {_one_line(request.resolution_reason, _REASON_SHOWN)}"
    return f"{verb}{scope} - {tool_name(request)} ({short(request.id)}){said}"


def answer_hint(request_id: str) -> str:
    """LINE's Reply button opened the keyboard: what to send."""
    return f'Type your answer after "{answer_prefill(request_id).rstrip()}" and send it.'


def answer_too_long(limit: int) -> str:
    """A typed ``answer <reference>: …`` over ``limit`` characters: refused, nothing decided."""
    return f"That answer is longer than {limit} characters; please shorten it and send it again."


def answer_missing(reference: str) -> str:
    """A typed ``answer <reference>:`` with nothing after the colon."""
    return f'Type your answer after "answer {reference}:".'


def reason_too_long(limit: int) -> str:
    """A typed reason (or answer) over ``limit`` characters: refused, the window still open."""
    return f"That is longer than {limit} characters; please shorten it and send it again."


def ask_reason_message(request: Request, window: float) -> str:
    """LINE's "Deny…": "Type the reason (or 'skip') to deny deploy (request 3fA9xK2b)…"."""
    return (
        f"{ASK_REASON} to deny {title(request)} ({short(request.id)}) within "
        f"{duration_text(window)}; after that, or if you tap another button, "
        "it is denied without a reason."
    )


def progress(request: Request) -> str:
    """ "1 of 2: alice approved": a quorum's count so far, for replies and cards."""
    names = request.approvals
    who = f": {' and '.join(names)} approved" if names else ""
    return f"{len(names)} of {request.quorum}{who}"


def partial_message(request: Request) -> str:
    """ "Approval counted, 1 of 2: alice approved - deploy_prod (request 3fA9xxxx)." """
    return f"Approval counted, {progress(request)} - {tool_name(request)} ({short(request.id)})."


def counted_message(request: Request) -> str:
    """A second tap by the same approver: it counts once, and says where the count is."""
    return f"Your approval was already counted, {progress(request)} - {tool_name(request)}."


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


def batch_message(
    batch_id: str,
    *,
    verb: str,
    applied: Sequence[Request],
    late: Sequence[Request],
    not_yours: int = 0,
    own: int = 0,
    one_by_one: int = 0,
) -> str:
    """What a batch tap did: "Batch 3fA9xK2b: 2 approved, 1 was already denied by bob."

    ``verb`` is the decision's past tense ("approved", "approved for this
    session", "denied"); ``late`` are the calls decided (or expired) before
    this tap, told as a late single tap is; ``not_yours`` counts open calls
    the tapper is not an approver of (refused and audited, one by one);
    ``own`` the open calls of the tapper's own agent (another approver must
    decide them); ``one_by_one`` the open calls that need several approvals,
    which "Approve all" does not count (each is approved on its own card).
    """
    parts = [f"{len(applied)} {verb}"] if applied else []
    # A call still "pending" here is past its deadline (the sweep has not run yet).
    statuses = [(r.status if r.status != "pending" else "expired", r.resolved_by) for r in late]
    told = Counter((status, by if status != "expired" else None) for status, by in statuses)
    for (status, by), n in sorted(told.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
        past = _PAST.get(status, status)
        if status == "expired":
            parts.append(f"{n} {'has' if n == 1 else 'have'} expired")
            continue
        was = "was" if n == 1 else "were"
        parts.append(f"{n} {was} already {past}" + (f" by {by}" if by else ""))
    if not_yours:
        parts.append(f"{not_yours} {'is' if not_yours == 1 else 'are'} not yours to decide")
    if own:
        parts.append(f"{own} {'is' if own == 1 else 'are'} your own agent's: another approver must")
    if one_by_one:
        needs = "needs" if one_by_one == 1 else "need"
        parts.append(f"{one_by_one} {needs} several approvals: approve on its own card")
    lead = "" if applied else "nothing decided; "
    return f"Batch {batch_id[:SHORT_ID_LENGTH]}: {lead}{', '.join(parts) or 'no calls'}."


def duration_text(seconds: float) -> str:
    """``30 days``, ``12 hours``, ``45 minutes``: a grant's lifetime as a card states it."""
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size:
            n = round(seconds / size)
            return f"{n} {unit}{'s' if n != 1 else ''}"
    return f"{round(seconds)} seconds"


def always_label(covers: str, ttl: float, uses: int | None = None) -> str:
    """What "Always allow" covers: "Always: deploy_web with env=staging, 30 days".

    A single-use grant (``always_uses: 1``) says "once" instead of its
    lifetime, the limit the approver will meet first; a few uses say both.
    """
    if uses == 1:
        return f"Always: {covers}, once"
    if uses is not None:
        return f"Always: {covers}, {uses} times within {duration_text(ttl)}"
    return f"Always: {covers}, {duration_text(ttl)}"


def session_label(covers: str, session: str) -> str:
    """What "Allow for session" covers: "Session: deploy_web with env=staging in s-42"."""
    return f"Session: {covers} in {session}"


def grant_line(grant: Grant, covers: str) -> str:
    """One listed grant: "deploy_web with env=staging for ci, until 2025-07-01 12:03 UTC"."""
    until = f"until {grant.expires_at:%Y-%m-%d %H:%M} UTC" if grant.expires_at else "no expiry"
    return f"{covers} for {grant.agent}, {until}"


def grants_heading(shown: int, total: int) -> str:
    """Above a listing: "Your active grants (2):", or which of how many are shown."""
    if shown >= total:
        return f"Your active grants ({total}):"
    return (
        f"Your active grants: the newest {shown} of {total}. "
        f"Revoke some to see the other {total - shown}."
    )


def revoked_message(covers: str) -> str:
    """A revoke that took: "Revoked: deploy_web with env=staging; it will ask again"."""
    return f"Revoked: {covers}; it will ask again."


def edit_denied(reason: str) -> str:
    """An edit the policy refuses: nothing is decided, and the approver can change it again."""
    return f"The policy does not allow the edited call: {mask_text(reason)[:300]}"


def edited_reason(by: str, changed: Sequence[str]) -> str:
    """The decision's reason for an edited approval: who, and which arguments changed."""
    names = ", ".join(mask_text(name)[:40] for name in changed[:5])
    more = f" and {len(changed) - 5} more" if len(changed) > 5 else ""
    return f"approved by {by} with edited arguments ({names}{more})"


def inbox_link_message(url: str, minutes: int) -> str:
    """The reply to ``inbox``: the sign-in link, and that it works once, briefly."""
    return f"Your tapgate inbox: {url}\nThe link signs you in once, within {minutes} minutes."
