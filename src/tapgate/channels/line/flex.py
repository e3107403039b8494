"""LINE Flex Message rendering of approval messages, and the postback format.

Owns LINE's limits and the ``data`` string a button sends back. LINE shows
Flex text as plain text (no markup, no mentions), so nothing is escaped; the
view is already masked and every control character made visible.

Limits (LINE's documented maximum → what we use, and why). LINE counts text in
UTF-16 code units, so every cap below is measured that way:

- ``altText`` 1500 (400 in older docs) → 400: it is the push notification line;
- bubble JSON 30 KB → arguments ≤ 2000 units and 40 lines, other arguments ≤ 500,
  facts ≤ 100 each, reason ≤ 200: even if every unit is sent as a ``\\uXXXX``
  escape (6 bytes) the whole message stays under ~26 KB;
- postback ``data`` 300 → ``v=1&a=<action>&r=<id>`` with an id of ≤ 64 URL-safe
  characters (≤ 95 in all);  action ``label`` 20 → "Allow for session" (17),
  "Always allow" (12);
  ``displayText`` 300 → ≤ 40;  ``fillInText`` 300 → ``answer <short id>: `` (17).

A call's *Deny…* sends ``v=1&a=deny_reason&r=<id>``: the webhook asks for the
reason, which the approver types next (``core.reasons``).

A question (``view.is_question``) gets *Reply* and *Dismiss*. LINE has no
dialogs, so Reply is a postback with ``inputOption: openKeyboard`` whose
``fillInText`` types ``answer 3fA9xK2b: `` for the approver (see
``core.buttons.answer_prefill``): they add the answer and send it as an
ordinary text message, which the webhook reads. Reply has no
``displayText``, so tapping it puts nothing in the chat.
"""

from __future__ import annotations

from typing import Any

from tapgate.channels.line.flex_parts import (
    ALT_TEXT_MAX,
    MUTED,
    REASON_MAX,
    RED,
    RISK_COLORS,
    box,
    call_button,
    closing_rows,
    fact,
    opening_rows,
    postback_button,
    row,
    text,
    utf16_len,
)
from tapgate.decisions.buttons import (
    TapAction,
    answer_prefill,
    deny_reason_postback_data,
    parse_postback_data,
    postback_data,
)
from tapgate.decisions.texts import EDIT_IN_WEB_INBOX
from tapgate.delivery.inbox_button import line_inbox_button
from tapgate.delivery.presentation import ApprovalView, clip, fit_text, question_heading

__all__ = [
    "LineAction",
    "parse_postback_data",
    "postback_data",
    "render_line",
    "utf16_len",
]

LineAction = TapAction
"""What a postback button asks for."""

ARGS_TEXT_MAX = 2000
ARGS_MAX_LINES = 40
EXTRA_TEXT_MAX = 500
EXTRA_MAX_LINES = 12


def render_line(view: ApprovalView, *, inbox: bool = False) -> dict[str, Any]:
    """The Flex message (a dict in LINE's JSON shape) asking for a decision or an answer.

    ``inbox`` adds "Open inbox" (the server has a public URL for the web inbox).
    """
    if view.is_question:
        return line_inbox_button(_render_question(view), inbox)
    alt = f"Approval needed: {view.tool} by {view.agent} ({view.risk}), request {view.short_id}"
    bubble = {
        "type": "bubble",
        "header": box(
            [
                text("Approval needed", size="sm", color=MUTED),
                text(fact(view.tool), size="lg", weight="bold", wrap=True),
            ]
        ),
        "body": box(
            [*_facts(view), *_arguments(view), *_covers(view), *_edit_note(view)], spacing="sm"
        ),
        "footer": box(_buttons(view), spacing="sm"),
    }
    message = {
        "type": "flex",
        "altText": clip(alt, ALT_TEXT_MAX, measure=utf16_len),
        "contents": bubble,
    }
    return line_inbox_button(message, inbox)


def _facts(view: ApprovalView) -> list[dict[str, Any]]:
    rows = opening_rows(view)
    rows += [
        row("Risk", view.risk, color=RISK_COLORS.get(view.risk, MUTED), weight="bold"),
        row("Rule", fact(view.rule)),
    ]
    if view.reason:
        rows.append(row("Reason", fact(view.reason, REASON_MAX)))
    rows += closing_rows(view)
    if view.note:
        rows.append(row("Status", fact(view.note, REASON_MAX)))
    return rows


def _arguments(view: ApprovalView) -> list[dict[str, Any]]:
    title = view.label if view.path is None else f"{view.label}: {view.path}"
    body = fit_text(
        view.body.removesuffix("\n"),
        max_len=ARGS_TEXT_MAX,
        max_lines=ARGS_MAX_LINES,
        measure=utf16_len,
    )
    parts = [
        {"type": "separator", "margin": "md"},
        text(fact(title, REASON_MAX), size="sm", weight="bold", wrap=True, margin="md"),
        text(body or "—", size="sm", wrap=True),
    ]
    return parts + _extra_parts(view)


def _extra_parts(view: ApprovalView) -> list[dict[str, Any]]:
    """The arguments the body does not show, small and muted (none if there are none)."""
    if view.extra is None:
        return []
    extra = fit_text(
        view.extra, max_len=EXTRA_TEXT_MAX, max_lines=EXTRA_MAX_LINES, measure=utf16_len
    )
    return [
        text("Other arguments", size="sm", weight="bold", margin="md"),
        text(extra, size="xs", wrap=True, color=MUTED),
    ]


def _buttons(view: ApprovalView) -> list[dict[str, Any]]:
    buttons = [
        call_button("Approve", "approve", view, f"Approve {view.short_id}", style="primary"),
        _deny_button(view),
    ]
    if view.can_allow_session:
        shown = f"Allow {view.short_id} for this session"
        buttons.append(call_button("Allow for session", "approve_session", view, shown))
    if view.can_allow_always:
        buttons.append(
            call_button("Always allow", "approve_always", view, f"Always allow {view.short_id}")
        )
    return buttons


def _deny_button(view: ApprovalView) -> dict[str, Any]:
    """ "Deny…": asks for the reason, which the approver types next (``core.reasons``)."""
    data = deny_reason_postback_data(view.request_id)
    shown = f"Deny {view.short_id}…"
    return postback_button("Deny…", data, shown=shown, style="primary", color=RED)


def _covers(view: ApprovalView) -> list[dict[str, Any]]:
    """What each remember button covers ("Always: deploy_web with env=staging, 30 days")."""
    lines = [line for line in (view.session_covers, view.always_covers) if line]
    return [text(fact(line, REASON_MAX), size="xs", wrap=True, color=MUTED) for line in lines]


def _edit_note(view: ApprovalView) -> list[dict[str, Any]]:
    """LINE has no dialogs: one line says where an editable call is edited (the web inbox)."""
    if not view.can_edit:
        return []
    return [text(EDIT_IN_WEB_INBOX, size="xs", wrap=True, color=MUTED, margin="md")]


# -- questions --------------------------------------------------------------------------


def _render_question(view: ApprovalView) -> dict[str, Any]:
    preview = " ".join(view.body.split())
    alt = f"Question from {view.agent}: {view.subject or preview}"
    bubble = {
        "type": "bubble",
        "header": box(
            [
                text("Question", size="sm", color=MUTED),
                text(fact(question_heading(view)), size="lg", weight="bold", wrap=True),
            ]
        ),
        "body": box([*_question_facts(view), *_question_text(view)], spacing="sm"),
        "footer": box(_question_buttons(view), spacing="sm"),
    }
    return {
        "type": "flex",
        "altText": clip(alt, ALT_TEXT_MAX, measure=utf16_len),
        "contents": bubble,
    }


def _question_facts(view: ApprovalView) -> list[dict[str, Any]]:
    return opening_rows(view, "Asked by") + closing_rows(view)


def _question_text(view: ApprovalView) -> list[dict[str, Any]]:
    body = fit_text(
        view.body.strip(), max_len=ARGS_TEXT_MAX, max_lines=ARGS_MAX_LINES, measure=utf16_len
    )
    parts = [
        {"type": "separator", "margin": "md"},
        text(body or "(no message)", wrap=True, margin="md"),
    ]
    return parts + _extra_parts(view)


def _question_buttons(view: ApprovalView) -> list[dict[str, Any]]:
    data = postback_data("reply", view.request_id)
    reply = postback_button(
        "Reply", data, keyboard=answer_prefill(view.request_id), style="primary"
    )
    dismiss = call_button("Dismiss", "dismiss", view, f"Dismiss {view.short_id}")
    return [reply, dismiss]
