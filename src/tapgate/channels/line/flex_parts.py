"""LINE Flex building blocks shared by the single card (``line_flex``) and the batch card.

Both cards must look like one family and send the same postbacks, so the
parts they have in common are built in one place: text, boxes, fact rows,
the postback button, and the rows every card opens and closes with (who
asked, in which session; when it expires, its id, who may decide). A change
to how a button or a row looks is then made once, not once per card.

LINE counts text in UTF-16 code units and rejects an empty text component;
:func:`fact` handles both. Limits and the reasons for them are in the
docstrings of ``line_flex`` and ``batch_flex``.
"""

from __future__ import annotations

from typing import Any

from tapgate.decisions.buttons import TapAction, postback_data
from tapgate.delivery.batch_view import BatchView
from tapgate.delivery.presentation import ApprovalView, clip

__all__ = [
    "ALT_TEXT_MAX",
    "FACT_MAX",
    "MUTED",
    "REASON_MAX",
    "RED",
    "RISK_COLORS",
    "box",
    "call_button",
    "closing_rows",
    "fact",
    "opening_rows",
    "postback_button",
    "row",
    "text",
    "utf16_len",
]

ALT_TEXT_MAX = 400
"""A card's push-notification line, single or batch (see ``line_flex``)."""
FACT_MAX = 100
REASON_MAX = 200
MUTED = "#8C8C8C"
RED = "#D93025"
RISK_COLORS = {"read_only": "#1DB446", "write": "#E37400", "destructive": RED}


def utf16_len(text: str) -> int:
    """Length as LINE counts it: UTF-16 code units (an emoji is two)."""
    return len(text.encode("utf-16-le")) // 2


def fact(value: str, max_len: int = FACT_MAX) -> str:
    """``value`` clipped to ``max_len`` UTF-16 units; "—" if empty (LINE rejects empty text)."""
    return clip(value, max_len, measure=utf16_len) or "—"


def text(value: str, **style: Any) -> dict[str, Any]:
    """A text component."""
    return {"type": "text", "text": value, **style}


def box(contents: list[dict[str, Any]], **style: Any) -> dict[str, Any]:
    """A vertical box."""
    return {"type": "box", "layout": "vertical", "contents": contents, **style}


def row(label: str, value: str, **style: Any) -> dict[str, Any]:
    """A "label  value" fact row; ``style`` applies to the value."""
    return {
        "type": "box",
        "layout": "baseline",
        "spacing": "sm",
        "contents": [
            text(label, size="sm", color=MUTED, flex=2),
            text(value, size="sm", wrap=True, flex=5, **style),
        ],
    }


def opening_rows(card: ApprovalView | BatchView, who: str = "Agent") -> list[dict[str, Any]]:
    """Who asked, and in which session (if any)."""
    rows = [row(who, fact(card.agent))]
    if card.session is not None:
        rows.append(row("Session", fact(card.session)))
    return rows


def closing_rows(card: ApprovalView | BatchView, id_label: str = "Request") -> list[dict[str, Any]]:
    """When the card expires, its short id, and who may decide (if named)."""
    expires = card.expires_text + (f" ({card.time_left})" if card.time_left else "")
    rows = [row("Expires", expires), row(id_label, card.short_id)]
    if card.approvers:
        rows.append(row("Approvers", fact(", ".join(card.approvers))))
    return rows


def postback_button(
    label: str,
    data: str,
    *,
    shown: str | None = None,
    keyboard: str | None = None,
    style: str = "secondary",
    color: str | None = None,
) -> dict[str, Any]:
    """A button that posts ``data`` back to the webhook.

    ``shown`` is the ``displayText`` the tap puts in the chat; ``keyboard``
    instead opens the approver's keyboard with that text typed in
    (``fillInText``), for a reply the approver finishes and sends.
    """
    button: dict[str, Any] = {"type": "button", "style": style, "height": "sm"}
    if color is not None:
        button["color"] = color
    action = {"type": "postback", "label": label, "data": data}
    if shown is not None:
        action["displayText"] = shown
    if keyboard is not None:
        action |= {"inputOption": "openKeyboard", "fillInText": keyboard}
    button["action"] = action
    return button


def call_button(
    label: str,
    action: TapAction,
    view: ApprovalView,
    shown: str,
    *,
    style: str = "secondary",
    color: str | None = None,
) -> dict[str, Any]:
    """A button deciding one call (``v=1&a=<action>&r=<id>``), on either card."""
    data = postback_data(action, view.request_id)
    return postback_button(label, data, shown=shown, style=style, color=color)
