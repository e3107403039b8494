"""Slack Block Kit rendering of approval messages.

Owns Slack's escaping and Slack's limits. Everything from the request is
untrusted (decision 0008-untrusted-text) and goes through :func:`escape`, which knows
three places text can land:

- everywhere: ``&``, ``<`` and ``>`` become entities, so ``<!channel>``,
  ``<@U123>`` and ``<https://evil|click>`` arrive as text;
- ``mrkdwn`` outside code (the message's fallback ``text``, which Slack also
  formats, and the facts between our bold labels): the markers ``*``, ``_``,
  ``~`` and the backtick become lookalikes (∗ ˍ ∼ ˋ). Slack has no escape for
  them: a backslash is shown as is, an entity (``&#42;``) is not decoded, and
  a zero-width space *enables* formatting (it counts as a word break). A
  lookalike cannot open or close anything, in the message or in a push
  notification; the approver reads the exact bytes in the code blocks;
- inside code (```` ``` ```` blocks, inline code) and ``plain_text``: Slack
  formats nothing there, so only the three entities apply and the arguments
  are shown byte for byte; runs of backticks get a zero-width space between
  them so an argument can never close its code block, and inline code swaps
  a backtick for its lookalike for the same reason.

Limits (Slack's documented maximum → what we use, and why):

- section text 3000 → arguments ≤ 3000 after escaping, ≤ 50 lines, because a
  longer message is collapsed behind "See more" and approvers stop reading;
- header plain_text 150 → 150;  field text 2000 → facts ≤ 120 characters;
- confirm dialog text 300 → 300;  button value 2000 → the request id (≤ 64);
- message ``text`` 40,000 (truncated beyond) → ≤ 3000, it is only the
  notification / fallback summary;  blocks per message 50 → at most 7.

A question (``view.is_question``) shows its text as ``plain_text`` (inert:
Slack parses no markup there) and Reply / Dismiss buttons; Reply opens the
webhook's answer dialog. Once answered, one block reads "💬 Answered by alice
at 12:03 UTC: <the answer>", the answer masked, escaped and cut like agent text.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from tapgate.channels.slack.text import LOOKALIKE_BACKTICK, TextPlace, escape
from tapgate.decisions.buttons import SLACK_ACTION_IDS, SLACK_EDIT_ACTION_ID
from tapgate.delivery.inbox_button import slack_inbox_button
from tapgate.delivery.presentation import (
    ApprovalView,
    ResolvedStatus,
    clip,
    fit_text,
    outcome_text,
    question_heading,
    resolved_title,
)
from tapgate.gate.models import Scope
from tapgate.policy.masking import clean

__all__ = [
    "ACTION_APPROVE",
    "ACTION_APPROVE_ALWAYS",
    "ACTION_APPROVE_SESSION",
    "ACTION_DENY",
    "ACTION_DISMISS",
    "ACTION_REPLY",
    "TextPlace",
    "escape",
    "render_slack",
    "render_slack_resolved",
]

ACTION_APPROVE = SLACK_ACTION_IDS["approve"]
"""``action_id`` of the Approve button; the button's ``value`` is the request id."""
ACTION_DENY = SLACK_ACTION_IDS["deny"]
"""``action_id`` of the Deny button."""
ACTION_APPROVE_SESSION = SLACK_ACTION_IDS["approve_session"]
"""``action_id`` of the Allow-for-session button (behind a confirm dialog)."""
ACTION_APPROVE_ALWAYS = SLACK_ACTION_IDS["approve_always"]
"""``action_id`` of the Always-allow button (behind a confirm dialog that says what it covers)."""
ACTION_REPLY = SLACK_ACTION_IDS["reply"]
"""``action_id`` of a question's Reply button: the webhook opens the answer dialog."""
ACTION_DISMISS = SLACK_ACTION_IDS["dismiss"]
"""``action_id`` of a question's Dismiss button (behind a confirm dialog): denies it."""

SECTION_TEXT_MAX = 3000
HEADER_TEXT_MAX = 150
FALLBACK_TEXT_MAX = 3000
CONFIRM_TEXT_MAX = 300
FACT_MAX = 120
ARGS_MAX_LINES = 50
EXTRA_TEXT_MAX = 1200
EXTRA_MAX_LINES = 20
PREVIEW_MAX = 150  # a question's opening words in the notification text
_RISK_ICONS = {"read_only": "🟢", "write": "🟠", "destructive": "🔴"}
_BACKTICK_RUN = re.compile(r"`(?=`)")
_LOOKALIKE_BACKTICK = LOOKALIKE_BACKTICK


def render_slack(view: ApprovalView, *, inbox: bool = False) -> dict[str, Any]:
    """The ``chat.postMessage`` payload (``text`` + ``blocks``) asking for a decision.

    Each button's ``value`` and the actions block's ``block_id`` carry the full
    request id, so an interaction names its request without any server state.
    ``inbox`` adds "Open inbox" (the server has a public URL for the web inbox).
    """
    if view.is_question:
        return slack_inbox_button(_render_question(view), inbox)
    blocks = [
        _header(f"Approval needed: {view.tool}"),
        *_summary(view, live=True),
        *_arguments(view),
        *_covers(view),
        _actions(view),
    ]
    return slack_inbox_button({"text": _fallback(view, "Approval needed"), "blocks": blocks}, inbox)


def _covers(view: ApprovalView) -> list[dict[str, Any]]:
    """What each remember button covers, under the arguments it refers to."""
    lines = [line for line in (view.session_covers, view.always_covers) if line]
    if not lines:
        return []
    elements = [_plain(line, FACT_MAX * 2) for line in lines]  # escaped like all agent text
    return [{"type": "context", "elements": elements}]


def render_slack_resolved(
    view: ApprovalView,
    *,
    status: ResolvedStatus,
    by: str | None,
    at: datetime,
    reason: str | None = None,
    scope: Scope | None = None,
) -> dict[str, Any]:
    """The ``chat.update`` payload once ``view``'s request is decided.

    The same summary with the buttons replaced by who decided and when, so a
    stale message can no longer be tapped and the channel history explains
    itself. ``reason`` (an approver's or the agent's words) is masked and escaped.
    """
    if view.is_question:
        return _question_resolved(view, status=status, by=by, at=at, reason=reason)
    line = outcome_text(status, by=clean(by) if by else None, at=at, scope=scope)
    elements = [_plain(line, 300)]
    if reason:
        elements.append(_plain(f"Reason: {clean(reason)}", 500))
    outcome = {"type": "context", "block_id": f"tapgate_resolved:{view.request_id}"}
    blocks = [
        _header(f"{resolved_title(status)}: {view.tool}"),
        *_summary(view, live=False),
        *_arguments(view),
        {**outcome, "elements": elements},
    ]
    return {"text": _fallback(view, line), "blocks": blocks}


def _header(text: str) -> dict[str, Any]:
    return {"type": "header", "text": _plain(text, HEADER_TEXT_MAX)}


def _plain(text: str, max_len: int) -> dict[str, str]:
    """A ``plain_text`` object: Slack formats nothing in it, so markers stay as typed."""
    return {"type": "plain_text", "text": _escaped_clip(text, max_len, place="plain_text")}


def _escaped_clip(text: str, max_len: int, *, place: TextPlace) -> str:
    """Clipped raw, then escaped, so an entity is never cut in half."""
    return escape(clip(text, max_len, measure=_escaped_len), place=place)


def _escaped_len(text: str) -> int:
    # The same in every place: a lookalike replaces its marker one for one.
    return len(escape(text, place="code"))


def _inline(value: str) -> str:
    """A fact as inline code: inert mrkdwn; a backtick would end it, so it is swapped."""
    text = clip(value, FACT_MAX).replace("`", _LOOKALIKE_BACKTICK)
    return f"`{escape(text, place='code')}`" if text.strip() else "—"


def _summary(view: ApprovalView, *, live: bool) -> list[dict[str, Any]]:
    """Facts as fields; ``live`` adds the time left, which is stale once decided."""
    expires = view.expires_text
    if live and view.time_left:
        expires += f" ({view.time_left})"
    fields = [f"*Agent*\n{_inline(view.agent)}"]
    if view.session is not None:
        fields.append(f"*Session*\n{_inline(view.session)}")
    fields += [
        f"*Risk*\n{_RISK_ICONS.get(view.risk, '')} {_inline(view.risk)}",
        f"*Expires*\n{escape(expires)}",
        f"*Request*\n{_inline(view.short_id)}",
    ]
    if view.approvers:
        fields.append(f"*Approvers*\n{escape(clip(', '.join(view.approvers), FACT_MAX))}")
    why = [{"type": "mrkdwn", "text": f"Asked by rule {_inline(view.rule)}"}]
    if view.reason:
        why.append(_plain(view.reason, 500))
    if view.note:
        why.append(_plain(view.note, 500))
    return [
        {"type": "section", "fields": [{"type": "mrkdwn", "text": f} for f in fields]},
        {"type": "context", "elements": why},
    ]


def _code(text: str) -> str:
    body = _BACKTICK_RUN.sub("`\u200b", escape(text.removesuffix("\n"), place="code"))
    return f"```\n{body or ' '}\n```"


def _arguments(view: ApprovalView) -> list[dict[str, Any]]:
    title = f"*{view.label}*"
    if view.path is not None:
        title += f" {_inline(view.path)}"
    body = fit_text(
        view.body,
        max_len=SECTION_TEXT_MAX,
        max_lines=ARGS_MAX_LINES,
        encode=lambda t: f"{title}\n{_code(t)}",
    )
    sections = [{"type": "section", "text": {"type": "mrkdwn", "text": body}}]
    return sections + _extra_sections(view)


def _extra_sections(view: ApprovalView) -> list[dict[str, Any]]:
    """The arguments the body does not show, as one code block (none if there are none)."""
    if view.extra is None:
        return []
    extra = fit_text(
        view.extra,
        max_len=EXTRA_TEXT_MAX,
        max_lines=EXTRA_MAX_LINES,
        encode=lambda t: f"*Other arguments*\n{_code(t)}",
    )
    return [{"type": "section", "text": {"type": "mrkdwn", "text": extra}}]


def _actions(view: ApprovalView) -> dict[str, Any]:
    buttons = [
        _button("Approve", ACTION_APPROVE, view.request_id, style="primary"),
        _button("Deny", ACTION_DENY, view.request_id, style="danger"),
    ]
    if view.can_allow_session:
        session = clip(view.session or "", 60)
        text = (
            f"Approve this request and every later call of {clip(view.tool, 60)} "
            f"from {clip(view.agent, 60)} in session {session} that matches it."
        )
        confirm = {
            "title": {"type": "plain_text", "text": "Allow for this session?"},
            "text": _plain(text, CONFIRM_TEXT_MAX),
            "confirm": {"type": "plain_text", "text": "Allow for session"},
            "deny": {"type": "plain_text", "text": "Cancel"},
        }
        button = _button("Allow for session", ACTION_APPROVE_SESSION, view.request_id)
        buttons.append({**button, "confirm": confirm})
    if view.can_allow_always and view.always_covers:
        confirm = {
            "title": {"type": "plain_text", "text": "Always allow?"},
            "text": _plain(
                f"Approve this request and remember it. {view.always_covers}.", CONFIRM_TEXT_MAX
            ),
            "confirm": {"type": "plain_text", "text": "Always allow"},
            "deny": {"type": "plain_text", "text": "Cancel"},
        }
        button = _button("Always allow", ACTION_APPROVE_ALWAYS, view.request_id)
        buttons.append({**button, "confirm": confirm})
    if view.can_edit:  # opens the edit modal (webhooks/_slack_edits.py); decides nothing
        buttons.append(_button("Edit…", SLACK_EDIT_ACTION_ID, view.request_id))
    return {"type": "actions", "block_id": f"tapgate:{view.request_id}", "elements": buttons}


def _button(
    label: str, action_id: str, request_id: str, *, style: str | None = None
) -> dict[str, Any]:
    button: dict[str, Any] = {
        "type": "button",
        "action_id": action_id,
        "text": {"type": "plain_text", "text": label},
        "value": request_id,
    }
    if style is not None:
        button["style"] = style
    return button


def _fallback(view: ApprovalView, headline: str) -> str:
    """The notification text: a plain summary, never the arguments."""
    text = (
        f"{headline}: {clip(view.tool, FACT_MAX)} requested by {clip(view.agent, FACT_MAX)} "
        f"(risk {view.risk}, rule {clip(view.rule, FACT_MAX)}), request {view.short_id}, "
        f"expires {view.expires_text}"
    )
    return _escaped_clip(text, FALLBACK_TEXT_MAX, place="mrkdwn")


# -- questions --------------------------------------------------------------------------


def _render_question(view: ApprovalView) -> dict[str, Any]:
    heading = f"Question: {view.subject}" if view.subject else question_heading(view)
    blocks = [
        _header(heading),
        _question_facts(view, live=True),
        *_question_text(view),
        _question_actions(view),
    ]
    return {"text": _question_fallback(view, "Question", live=True), "blocks": blocks}


def _question_resolved(
    view: ApprovalView, *, status: ResolvedStatus, by: str | None, at: datetime, reason: str | None
) -> dict[str, Any]:
    line = outcome_text(status, by=clean(by) if by else None, at=at, question=True)
    block_id = f"tapgate_resolved:{view.request_id}"
    if status == "approved" and reason:
        answer = fit_text(
            f"{line}: {clean(reason)}",
            max_len=SECTION_TEXT_MAX,
            max_lines=ARGS_MAX_LINES,
            encode=lambda t: escape(t, place="plain_text"),
        )
        outcome: dict[str, Any] = {
            "type": "section",
            "block_id": block_id,
            "text": {"type": "plain_text", "text": answer},
        }
        summary = f"{line}: {clip(clean(reason), PREVIEW_MAX)}"
    else:
        elements = [_plain(line, 300)]
        if reason:
            elements.append(_plain(f"Reason: {clean(reason)}", 500))
        outcome = {"type": "context", "block_id": block_id, "elements": elements}
        summary = line
    blocks = [
        _header(f"{resolved_title(status, question=True)}: {question_heading(view)}"),
        _question_facts(view, live=False),
        *_question_text(view),
        outcome,
    ]
    return {"text": _question_fallback(view, summary, live=False), "blocks": blocks}


def _question_facts(view: ApprovalView, *, live: bool) -> dict[str, Any]:
    """Who asks, until when, which request: a question has no risk and no rule to weigh."""
    expires = view.expires_text
    if live and view.time_left:
        expires += f" ({view.time_left})"
    fields = [f"*Asked by*\n{_inline(view.agent)}"]
    if view.session is not None:
        fields.append(f"*Session*\n{_inline(view.session)}")
    fields += [f"*Expires*\n{escape(expires)}", f"*Request*\n{_inline(view.short_id)}"]
    if view.approvers:
        fields.append(f"*Approvers*\n{escape(clip(', '.join(view.approvers), FACT_MAX))}")
    return {"type": "section", "fields": [{"type": "mrkdwn", "text": f} for f in fields]}


def _question_text(view: ApprovalView) -> list[dict[str, Any]]:
    text = fit_text(
        view.body.strip() or "(no message)",
        max_len=SECTION_TEXT_MAX,
        max_lines=ARGS_MAX_LINES,
        encode=lambda t: escape(t, place="plain_text"),
    )
    sections = [{"type": "section", "text": {"type": "plain_text", "text": text}}]
    return sections + _extra_sections(view)


def _question_actions(view: ApprovalView) -> dict[str, Any]:
    confirm = {
        "title": {"type": "plain_text", "text": "Dismiss this question?"},
        "text": {
            **_plain(f"{clip(view.agent, 60)} is told that nobody will answer.", CONFIRM_TEXT_MAX)
        },
        "confirm": {"type": "plain_text", "text": "Dismiss"},
        "deny": {"type": "plain_text", "text": "Cancel"},
    }
    buttons = [
        _button("Reply", ACTION_REPLY, view.request_id, style="primary"),
        {**_button("Dismiss", ACTION_DISMISS, view.request_id), "confirm": confirm},
    ]
    return {"type": "actions", "block_id": f"tapgate:{view.request_id}", "elements": buttons}


def _question_fallback(view: ApprovalView, headline: str, *, live: bool) -> str:
    """The notification text: the heading, and while it is open the question's first words."""
    text = f"{headline} - {clip(question_heading(view), FACT_MAX)}"
    if live:
        preview = clip(view.body.strip(), PREVIEW_MAX)
        text += f": {preview} (request {view.short_id}, expires {view.expires_text})"
    else:
        text += f" (request {view.short_id})"
    return _escaped_clip(text, FALLBACK_TEXT_MAX, place="mrkdwn")
