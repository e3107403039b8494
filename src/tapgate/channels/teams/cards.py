"""The Adaptive Card of one request: asking, decided, or shown back with a line on top.

Built from the shared presentation model (:func:`~tapgate.delivery.presentation.present`),
so Teams shows what Slack and LINE show. :func:`render_request` picks the
card a request needs *now* (it is what a press is answered with, and what
``updateActivity`` puts in every other approver's chat): the asking card
while the request is pending, else the decided one. ``notice`` puts one line
on top (a refusal, a quorum's progress) without changing anything else.

"Open in inbox" (``Action.OpenUrl``) is a plain link to the web inbox: it
signs nobody in (a signed-out browser is told to ask the chat, ``inbox``).

A call's Deny takes a reason from the card's own text box (sent with the
press); a question's Reply sends the answer typed in its box.
"""

from __future__ import annotations

from typing import Any

from tapgate.channels.teams.card_parts import (
    INBOX_TITLE,
    REASON_MAX,
    attachment_activity,
    button,
    card,
    closing_facts,
    fact,
    fits,
    line,
    open_url,
    opening_facts,
    reason_input,
)
from tapgate.decisions.buttons import postback_data
from tapgate.decisions.chat_commands import inbox_page
from tapgate.delivery.presentation import (
    ApprovalView,
    fit_text,
    outcome_text,
    question_heading,
    resolved_title,
)
from tapgate.gate.models import Request
from tapgate.policy.masking import clean

__all__ = ["render_request"]

_CUTS = ((2000, 40, 500), (1000, 20, 200), (300, 8, 100))
"""Argument caps (characters, lines, other arguments) tried in turn until the card fits."""
_RISK_COLORS = {"read_only": "Good", "write": "Warning", "destructive": "Attention"}


def render_request(
    view: ApprovalView,
    request: Request,
    *,
    notice: str | None = None,
    public_url: str | None = None,
) -> dict[str, Any]:
    """The message activity showing ``request`` as it is now (see the module docstring).

    With ``public_url`` (the web inbox is reachable) an asking card ends with
    "Open in inbox", a link to the request on the inbox's pending page.
    """
    inbox = inbox_page(public_url, view.request_id)
    for cut in _CUTS:
        if request.is_pending:
            body, actions = _asking(view, cut)
            if inbox is not None:
                actions.append(open_url(INBOX_TITLE, inbox))
        else:
            body, actions = _decided(view, request, cut)
        if notice:
            body.insert(0, line(notice, weight="Bolder", color="Attention"))
        activity = attachment_activity(card(body, actions), _summary(view, request))
        if fits(activity):
            return activity
    raise ValueError(f"the card of request {view.request_id} does not fit Teams' limit")


def _summary(view: ApprovalView, request: Request) -> str:
    if not request.is_pending:
        return f"{resolved_title(request.status, question=view.is_question)}: {view.tool}"  # type: ignore[arg-type]
    if view.is_question:
        return f"Question from {view.agent}: {view.subject or view.body[:80]}"
    return f"Approval needed: {view.tool} by {view.agent} ({view.risk}), request {view.short_id}"


def _asking(
    view: ApprovalView, cut: tuple[int, int, int]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    if view.is_question:
        body = [
            line("Question", isSubtle=True),
            line(question_heading(view), weight="Bolder", size="Large"),
            *opening_facts(view, "Asked by"),
            *closing_facts(view),
            *_text(view, cut),
            reason_input("answer", "Your answer", multiline=True),
        ]
        actions = [
            button("Reply", postback_data("reply", view.request_id), style="positive"),
            button("Dismiss", postback_data("dismiss", view.request_id)),
        ]
        return body, actions
    body = [
        line("Approval needed", isSubtle=True),
        line(view.tool, weight="Bolder", size="Large"),
        *_facts(view),
        *_arguments(view, cut),
        *_covers(view),
        reason_input("reason", "Reason (sent with Deny; optional)"),
    ]
    return body, _buttons(view)


def _covers(view: ApprovalView) -> list[dict[str, Any]]:
    """What each remember button covers ("Always: deploy_web with env=staging, 30 days")."""
    covers = (view.session_covers, view.always_covers)
    return [line(c, isSubtle=True, size="Small") for c in covers if c]


def _buttons(view: ApprovalView) -> list[dict[str, Any]]:
    rid = view.request_id
    actions = [
        button("Approve", postback_data("approve", rid), style="positive"),
        button("Deny", postback_data("deny", rid), style="destructive"),
    ]
    if view.can_allow_session:
        actions.append(button("Allow for session", postback_data("approve_session", rid)))
    if view.can_allow_always:
        actions.append(button("Always allow", postback_data("approve_always", rid)))
    return actions


def _decided(
    view: ApprovalView, request: Request, cut: tuple[int, int, int]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    status = request.status
    question = view.is_question
    at = request.resolved_at or request.expires_at
    by = clean(request.resolved_by) if request.resolved_by else None
    outcome = outcome_text(status, by=by, at=at, scope=request.scope, question=question)  # type: ignore[arg-type]
    title = resolved_title(status, question=question)  # type: ignore[arg-type]
    heading = question_heading(view) if question else view.tool
    body = [
        line(f"{title}: {heading}", weight="Bolder", size="Large"),
        line(outcome, weight="Bolder"),
    ]
    if request.resolution_reason:
        label = "Answer" if question and status == "approved" else "Reason"
        body.append(fact(label, clean(request.resolution_reason), max_len=cut[0]))
    body += opening_facts(view, "Asked by" if question else "Agent")
    body.append(fact("Request", view.short_id))
    body += _text(view, cut) if question else _arguments(view, cut)
    return body, []


def _facts(view: ApprovalView) -> list[dict[str, Any]]:
    facts = opening_facts(view)
    facts.append(fact("Risk", view.risk, color=_RISK_COLORS.get(view.risk, "Default")))
    facts.append(fact("Rule", view.rule))
    if view.reason:
        facts.append(fact("Reason", view.reason, REASON_MAX))
    facts += closing_facts(view)
    if view.note:
        facts.append(fact("Status", view.note, REASON_MAX))
    return facts


def _arguments(view: ApprovalView, cut: tuple[int, int, int]) -> list[dict[str, Any]]:
    chars, lines, extra_chars = cut
    title = view.label if view.path is None else f"{view.label}: {view.path}"
    body = fit_text(view.body.removesuffix("\n"), max_len=chars, max_lines=lines)
    parts = [
        line(title[:REASON_MAX], weight="Bolder", separator=True),
        line(body or "—", fontType="Monospace"),
    ]
    if view.extra is not None:
        extra = fit_text(view.extra, max_len=extra_chars, max_lines=12)
        parts += [line("Other arguments", weight="Bolder"), line(extra, fontType="Monospace")]
    return [_spaced(p) for p in parts]


def _text(view: ApprovalView, cut: tuple[int, int, int]) -> list[dict[str, Any]]:
    body = fit_text(view.body.strip(), max_len=cut[0], max_lines=cut[1])
    return [_spaced(line(body or "(no message)"))]


def _spaced(block: dict[str, Any]) -> dict[str, Any]:
    """``separator`` belongs on the block, not the run: move it there."""
    runs = block["inlines"]
    if runs and runs[0].pop("separator", False):
        return {**block, "separator": True, "spacing": "Medium"}
    return block
