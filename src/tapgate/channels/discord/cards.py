"""Discord cards for one request: an embed and a row of buttons, and the card once decided.

Every piece of agent text goes through :mod:`.text` (escaped outside code,
in unclosable code blocks inside). Buttons carry the domain's button data
(:mod:`tapgate.decisions.buttons`: ``v=1&a=approve&r=<request id>``, at most
92 characters) as their ``custom_id``: an action and an id, never the
request's contents, within Discord's 100 and unique per message.

Limits (Discord's documented maximum → what we use):

- ``content`` 2000 → ≤ 300, the notification line only;
- embed title 256, description 4096, field name 256, field value 1024,
  footer 2048, at most 25 fields, 6000 characters across the embed →
  arguments ≤ 3000 (≤ 40 lines), other arguments ≤ 1000, facts ≤ 120;
- action rows ≤ 5, buttons ≤ 5 a row, label ≤ 80, ``custom_id`` 1-100.

Deny (and a question's Reply) opens a modal (:mod:`.modals`), "Edit…" the
edit modal (:mod:`.edits`); "Open inbox" (when the web inbox has a public
URL) answers the presser alone with a single-use sign-in link. These, on a
second row, decide nothing by themselves. A call whose edit does not fit a
modal (more than five arguments) is edited in the web inbox: its "Open
inbox" reads "Edit in inbox", and without a public URL it offers no edit.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from tapgate.channels.discord.edits import edit_custom_id, fits_modal
from tapgate.channels.discord.text import code_block, escape, escaped_clip
from tapgate.decisions.buttons import INBOX_POSTBACK, TapAction, postback_data
from tapgate.delivery.presentation import (
    ApprovalView,
    ResolvedStatus,
    clip,
    fit_text,
    outcome_text,
    question_heading,
    resolved_title,
)
from tapgate.gate.models import Request, Scope
from tapgate.policy.masking import clean

__all__ = [
    "ARGS_MAX",
    "BUTTON",
    "NO_MENTIONS",
    "STYLE",
    "EditOffer",
    "button",
    "edit_offer",
    "inbox_button",
    "render_discord",
    "render_discord_resolved",
]

ARGS_MAX = 3000
ARGS_MAX_LINES = 40
EXTRA_MAX = 1000
FACT_MAX = 120
CONTENT_MAX = 300
TITLE_MAX = 256
BUTTON = 2
"""Component type of a button (an action row is 1)."""
STYLE = {"primary": 1, "secondary": 2, "success": 3, "danger": 4}
NO_MENTIONS: dict[str, Any] = {"parse": []}
"""``allowed_mentions`` of every message: agent text can never ping anyone."""
_COLOURS: dict[str, int] = {"read_only": 0x2ECC71, "write": 0xE67E22, "destructive": 0xE74C3C}
_RESOLVED_COLOURS: dict[str, int] = {
    "approved": 0x2ECC71,
    "denied": 0xE74C3C,
    "expired": 0x95A5A6,
    "cancelled": 0x95A5A6,
}


EditOffer = Literal["modal", "inbox"] | None
"""How a card offers editing: "Edit…" (a modal), the web inbox, or not at all."""


def edit_offer(view: ApprovalView, request: Request) -> EditOffer:
    """What ``request``'s card offers for editing (the view says whether it is editable)."""
    if not view.can_edit:
        return None
    return "modal" if fits_modal(request) else "inbox"


def render_discord(
    view: ApprovalView, *, inbox: bool = False, edit: EditOffer = None
) -> dict[str, Any]:
    """The Create Message body asking for a decision: content, one embed, rows of buttons.

    ``inbox``: the web inbox has a public URL ("Open inbox"); ``edit``: see :func:`edit_offer`.
    """
    headline = question_heading(view) if view.is_question else f"Approval needed: {view.tool}"
    embed = _embed(view, headline, colour=_COLOURS.get(view.risk, 0x5865F2), live=True)
    rows = [{"type": 1, "components": _buttons(view)}]
    extra = _second_row(view, inbox=inbox, edit=edit)
    if extra:
        rows.append({"type": 1, "components": extra})
    return {
        "content": _content(view, "Question" if view.is_question else "Approval needed"),
        "embeds": [embed],
        "components": rows,
        "allowed_mentions": NO_MENTIONS,
    }


def inbox_button(label: str = "Open inbox") -> dict[str, Any]:
    """ "Open inbox": names no request; the press answers the presser with their own link."""
    return {
        "type": BUTTON,
        "style": STYLE["secondary"],
        "label": label,
        "custom_id": INBOX_POSTBACK,
    }


def _second_row(view: ApprovalView, *, inbox: bool, edit: EditOffer) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    if edit == "modal" and not view.is_question:
        found.append(
            {
                "type": BUTTON,
                "style": STYLE["primary"],
                "label": "Edit…",
                "custom_id": edit_custom_id(view.request_id),
            }
        )
    if inbox:
        found.append(inbox_button("Edit in inbox" if edit == "inbox" else "Open inbox"))
    return found


def render_discord_resolved(
    view: ApprovalView,
    *,
    status: ResolvedStatus,
    by: str | None,
    at: datetime,
    reason: str | None = None,
    scope: Scope | None = None,
) -> dict[str, Any]:
    """The Edit Message body once decided: the same facts, the outcome, and no buttons."""
    question = view.is_question
    line = outcome_text(status, by=clean(by) if by else None, at=at, scope=scope, question=question)
    title = f"{resolved_title(status, question=question)}: {view.tool}"
    embed = _embed(view, title, colour=_RESOLVED_COLOURS[status], live=False)
    value = escaped_clip(line, 300)
    if reason:
        label = "Answer" if question and status == "approved" else "Reason"
        value += "\n" + escape(label + ": ") + escaped_clip(clean(reason), 600)
    embed["fields"].append({"name": "Outcome", "value": value})
    return {
        "content": _content(view, line),
        "embeds": [embed],
        "components": [],
        "allowed_mentions": NO_MENTIONS,
    }


def button(label: str, action: TapAction, request_id: str, style: str) -> dict[str, Any]:
    """One button whose ``custom_id`` is the domain's button data for ``action``."""
    return {
        "type": BUTTON,
        "style": STYLE[style],
        "label": clip(label, 80),
        "custom_id": postback_data(action, request_id),
    }


def _buttons(view: ApprovalView) -> list[dict[str, Any]]:
    rid = view.request_id
    if view.is_question:
        return [
            button("Reply…", "reply", rid, "primary"),
            button("Dismiss", "dismiss", rid, "secondary"),
        ]
    buttons = [button("Approve", "approve", rid, "success"), button("Deny…", "deny", rid, "danger")]
    if view.can_allow_session:
        buttons.append(button("Allow for session", "approve_session", rid, "secondary"))
    if view.can_allow_always and view.always_covers:
        buttons.append(button("Always allow", "approve_always", rid, "secondary"))
    return buttons


def _embed(view: ApprovalView, title: str, *, colour: int, live: bool) -> dict[str, Any]:
    fields = _facts(view, live=live)
    if view.extra is not None:
        extra = fit_text(view.extra, max_len=EXTRA_MAX, max_lines=20, encode=code_block)
        fields.append({"name": "Other arguments", "value": extra})
    covers = [line for line in (view.session_covers, view.always_covers) if line]
    if live and covers:
        fields.append(
            {"name": "Remember", "value": "\n".join(escaped_clip(c, 480) for c in covers)}
        )
    return {
        "title": escaped_clip(title, TITLE_MAX),
        "description": _arguments(view),
        "color": colour,
        "fields": fields,
        "footer": {"text": clip(f"tapgate · request {view.request_id}", 200)},
    }


def _arguments(view: ApprovalView) -> str:
    heading = f"**{escape(view.label)}**"
    if view.path is not None:
        heading += " " + escaped_clip(view.path, 300)
    return fit_text(
        view.body,
        max_len=ARGS_MAX,
        max_lines=ARGS_MAX_LINES,
        encode=lambda text: f"{heading}\n{code_block(text)}",
    )


def _facts(view: ApprovalView, *, live: bool) -> list[dict[str, Any]]:
    expires = view.expires_text + (f" ({view.time_left})" if live and view.time_left else "")
    facts = [("Agent", view.agent)]
    if view.session is not None:
        facts.append(("Session", view.session))
    facts += [("Risk", view.risk), ("Expires", expires), ("Request", view.short_id)]
    if view.approvers:
        facts.append(("Approvers", ", ".join(view.approvers)))
    fields = [
        {"name": n, "value": escaped_clip(v, FACT_MAX) or "—", "inline": True} for n, v in facts
    ]
    why = [f"Asked by rule {view.rule}"] + [t for t in (view.reason, view.note) if t]
    fields.append({"name": "Why", "value": "\n".join(escaped_clip(t, 300) for t in why)})
    return fields


def _content(view: ApprovalView, headline: str) -> str:
    """The notification line: what and from whom, never the arguments."""
    tool, agent = clip(view.tool, FACT_MAX), clip(view.agent, FACT_MAX)
    text = f"{headline}: {tool} from {agent} ({view.short_id})"
    return escaped_clip(text, CONTENT_MAX)
