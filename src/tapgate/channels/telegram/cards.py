"""Telegram cards: one request (or a batch) as an HTML message with an inline keyboard.

Everything shown comes from the presentation model (:mod:`tapgate.delivery.presentation`,
:mod:`tapgate.delivery.batch_view`): agent text is masked and made visible
there; this module escapes it for ``parse_mode=HTML`` and fits it to
Telegram's limits. Telegram's HTML knows only ``&lt; &gt; &amp;`` (and
``&quot;``) as named entities, so :func:`escape` replaces exactly ``& < >``.

Limits (Telegram's → ours):

- message text 1-4096 characters *after entity parsing* → the visible text
  (tags dropped, entities one character each) measured in UTF-16 units, at
  most :data:`TEXT_MAX`; the arguments shrink until the card fits, and a
  cut always says what it cut (:func:`~tapgate.delivery.presentation.fit_text`);
- ``callback_data`` 1-64 bytes → the domain's button data
  (:mod:`tapgate.decisions.buttons`: ``v=1&a=approve&r=<request id>``, at
  most 50 bytes with tapgate's 22-character ids): a reference the server
  looks up, never the request's contents; :func:`button` refuses anything longer;
- ≤ 8 buttons a row, ~100 in a keyboard → a batch shows per-call buttons
  for at most :data:`BATCH_BUTTON_CALLS` open calls, four calls a row.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tapgate.decisions.buttons import (
    BatchAction,
    TapAction,
    batch_postback_data,
    deny_reason_postback_data,
    postback_data,
)
from tapgate.decisions.texts import EDIT_IN_WEB_INBOX
from tapgate.delivery.batch_view import BatchCall, BatchView
from tapgate.delivery.presentation import (
    ApprovalView,
    ResolvedStatus,
    clip,
    fit_text,
    outcome_text,
    question_heading,
)
from tapgate.gate.models import Scope
from tapgate.policy.masking import clean

__all__ = [
    "BATCH_BUTTON_CALLS",
    "CALLBACK_DATA_MAX",
    "TEXT_MAX",
    "Card",
    "button",
    "escape",
    "render_batch",
    "render_card",
    "render_resolved",
    "visible_length",
]

TEXT_MAX = 4096
CALLBACK_DATA_MAX = 64
BATCH_BUTTON_CALLS = 48
"""Open calls that get their own Approve / Deny (96 buttons + 3 for the whole batch)."""
_ROW_MAX = 8
_FACT_MAX = 200
_BODY_LINES = 60
_EXTRA_MAX = 600
_TAG = re.compile(r"<[^>]*>")
_RISK_ICONS = {"low": "🟢", "medium": "🟡", "high": "🔴", "critical": "🛑"}

Keyboard = list[list[dict[str, str]]]


@dataclass(frozen=True, kw_only=True, slots=True)
class Card:
    """What ``sendMessage`` / ``editMessageText`` carry: HTML text and the keyboard rows."""

    text: str
    keyboard: Keyboard

    def payload(self) -> dict[str, Any]:
        """The method's fields besides ``chat_id`` (an empty keyboard removes the buttons)."""
        return {
            "text": self.text,
            "parse_mode": "HTML",
            "link_preview_options": {"is_disabled": True},
            "reply_markup": {"inline_keyboard": self.keyboard},
        }


def escape(text: str) -> str:
    """``text`` safe inside Telegram HTML: ``& < >`` as entities, nothing else touched."""
    return html.escape(text, quote=False)


def visible_length(markup: str) -> int:
    """What Telegram counts against 4096: the text after entity parsing, in UTF-16 units."""
    shown = html.unescape(_TAG.sub("", markup))
    return len(shown.encode("utf-16-le")) // 2


def _utf16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def button(label: str, data: str) -> dict[str, str]:
    """One inline button; ``ValueError`` if ``data`` is over Telegram's 64 bytes."""
    if not 1 <= len(data.encode("utf-8")) <= CALLBACK_DATA_MAX:
        raise ValueError(f"callback_data must be 1-{CALLBACK_DATA_MAX} bytes, got {data!r}")
    return {"text": label, "callback_data": data}


def _fact(text: str, limit: int = _FACT_MAX) -> str:
    return escape(clip(text, limit, measure=_utf16))


def _code_block(text: str, budget: int) -> str:
    """``<pre>`` of ``text`` whose visible part is at most ``budget`` units (cut visibly)."""
    if budget < 60:  # too little room for a counted cut: one line, ellipsised
        return f"<pre>{escape(clip(text, max(budget, 1), measure=_utf16))}</pre>"
    fitted = fit_text(text, max_len=budget, max_lines=_BODY_LINES, measure=_utf16)
    return f"<pre>{escape(fitted)}</pre>"


# -- a single request ---------------------------------------------------------------------


def render_card(view: ApprovalView) -> Card:
    """The live card: what is asked, the arguments, and the buttons the request offers."""
    keyboard = _question_keyboard(view) if view.is_question else _keyboard(view)
    return Card(text=_fit(view, _heading(view), _tail(view, live=True)), keyboard=keyboard)


def render_resolved(
    view: ApprovalView,
    *,
    status: ResolvedStatus,
    by: str | None,
    at: datetime,
    reason: str | None = None,
    scope: Scope | None = None,
) -> Card:
    """The card once decided, drawn from the stored outcome: the same facts, no buttons."""
    who = clean(by) if by else None
    line = outcome_text(status, by=who, at=at, scope=scope, question=view.is_question)
    tail = [f"<b>{escape(line)}</b>"]
    if reason:
        label = "Answer" if view.is_question and status == "approved" else "Reason"
        tail.append(f"{label}: {_fact(clean(reason), 1000)}")
    return Card(text=_fit(view, _heading(view), tail + _tail(view, live=False)), keyboard=[])


def _heading(view: ApprovalView) -> list[str]:
    if view.is_question:
        lines = [
            f"💬 <b>{_fact(question_heading(view))}</b>",
            f"Asked by <b>{_fact(view.agent)}</b>",
        ]
    else:
        icon = _RISK_ICONS.get(view.risk, "🔐")
        lines = [
            f"{icon} <b>Approval needed</b> · {escape(view.risk)} risk",
            f"<b>{_fact(view.tool)}</b> from <b>{_fact(view.agent)}</b>",
            f"Rule: {_fact(view.rule)} · {_fact(view.reason)}",
        ]
    if view.session:
        lines.append(f"Session: <code>{_fact(view.session, 80)}</code>")
    if view.note:
        lines.append(_fact(view.note, 300))
    return lines


def _tail(view: ApprovalView, *, live: bool) -> list[str]:
    lines: list[str] = []
    if live:
        lines += [_fact(c, 300) for c in (view.session_covers, view.always_covers) if c]
        if view.can_edit:
            lines.append(escape(EDIT_IN_WEB_INBOX))
        lines.append(f"Approvers: {_fact(', '.join(view.approvers), 300)}")
        lines.append(f"Expires {escape(view.expires_text)}")
    lines.append(f"Request <code>{escape(view.short_id)}</code>")
    return lines


def _fit(view: ApprovalView, head: list[str], tail: list[str]) -> str:
    """Head, the arguments in the room left, tail: at most :data:`TEXT_MAX` visible units."""
    title = escape(view.label if view.path is None else f"{view.label}: {view.path}")
    fixed = "\n".join([*head, "", *tail])
    extra = ""
    if view.extra:
        extra = "\n<b>Other arguments</b>\n" + _code_block(view.extra, _EXTRA_MAX)
    room = TEXT_MAX - visible_length(fixed) - visible_length(extra) - _utf16(title) - 8
    body = view.body.strip() or "(empty)"
    if view.is_question:
        shown = escape(fit_text(body, max_len=max(room, 60), max_lines=_BODY_LINES, measure=_utf16))
        middle = shown + extra
    else:
        middle = f"<b>{title}</b>\n{_code_block(body, room)}{extra}"
    return "\n".join([*head, "", middle, "", *tail])


def _keyboard(view: ApprovalView) -> Keyboard:
    rows: Keyboard = [
        [
            _call("✅ Approve", "approve", view.request_id),
            button("❌ Deny…", deny_reason_postback_data(view.request_id)),
        ]
    ]
    remember = []
    if view.can_allow_session:
        remember.append(_call("Allow for session", "approve_session", view.request_id))
    if view.can_allow_always:
        remember.append(_call("Always allow", "approve_always", view.request_id))
    return rows + ([remember] if remember else [])


def _question_keyboard(view: ApprovalView) -> Keyboard:
    return [
        [
            _call("💬 Reply", "reply", view.request_id),
            _call("Dismiss", "dismiss", view.request_id),
        ]
    ]


def _call(label: str, action: TapAction, request_id: str) -> dict[str, str]:
    return button(label, postback_data(action, request_id))


# -- a batch ------------------------------------------------------------------------------


def render_batch(batch: BatchView) -> Card:
    """One card for a batch: each call numbered, its own buttons, and the batch's own.

    Per-call arguments share what room the message has: each call gets an
    equal share of it, cut visibly, so the 50th call is shown as surely as the first.
    """
    count = len(batch.calls)
    head = [
        f"🧺 <b>{count} calls from {_fact(batch.agent)}</b> need approval",
    ]
    if batch.session:
        head.append(f"Session: <code>{_fact(batch.session, 80)}</code>")
    tail = [
        f"Approvers: {_fact(', '.join(batch.approvers), 300)}",
        f"Expires {escape(batch.expires_text)}",
        f"Batch <code>{escape(batch.short_id)}</code>",
    ]
    fixed = visible_length("\n".join([*head, "", "", *tail]))
    outlines = [_call_line(i, call) for i, call in enumerate(batch.calls, start=1)]
    room = TEXT_MAX - fixed - sum(visible_length(o) + 2 for o in outlines)
    share = max(room // max(count, 1) - 12, 20)
    parts = [f"{o}\n{_call_body(c, share)}" for o, c in zip(outlines, batch.calls, strict=True)]
    text = "\n".join([*head, "", *parts, "", *tail])
    while visible_length(text) > TEXT_MAX and share > 20:  # a cut's marker outgrew its share
        share = max(share * 3 // 4, 20)
        parts = [f"{o}\n{_call_body(c, share)}" for o, c in zip(outlines, batch.calls, strict=True)]
        text = "\n".join([*head, "", *parts, "", *tail])
    return Card(text=text, keyboard=_batch_keyboard(batch))


def _call_line(number: int, call: BatchCall) -> str:
    view = call.view
    line = f"<b>{number}.</b> <b>{_fact(view.tool, 60)}</b> · {escape(view.risk)}"
    if call.outcome is not None:
        line += f" · {escape(call.outcome)}"
    return line


def _call_body(call: BatchCall, share: int) -> str:
    view = call.view
    body = view.body.strip() or "(empty)"
    if view.path is not None:
        body = f"{view.path}\n{body}"
    shown = _code_block(body, share)
    if call.reason:
        shown += f"\nReason: {_fact(call.reason, 120)}"
    return shown


def _batch_keyboard(batch: BatchView) -> Keyboard:
    open_calls = [(i, c) for i, c in enumerate(batch.calls, start=1) if c.is_open]
    if not open_calls:
        return []
    per_call = [
        b
        for number, call in open_calls[:BATCH_BUTTON_CALLS]
        for b in (
            _call(f"✅ {number}", "approve", call.view.request_id),
            _call(f"❌ {number}", "deny", call.view.request_id),
        )
    ]
    rows = [per_call[i : i + _ROW_MAX] for i in range(0, len(per_call), _ROW_MAX)]
    count = len(open_calls)
    whole = [
        _batch("✅ Approve all" if count > 1 else "✅ Approve", "approve_all", batch),
        _batch("❌ Deny all" if count > 1 else "❌ Deny", "deny_all", batch),
    ]
    if batch.can_allow_session:
        whole.append(_batch("Allow all for session", "approve_all_session", batch))
    return [*rows, whole]


def _batch(label: str, action: BatchAction, batch: BatchView) -> dict[str, str]:
    return button(label, batch_postback_data(action, batch.batch_id))
