"""The pieces every tapgate Adaptive Card is built from, and Teams' limits.

Every piece of text a card shows is a ``TextRun`` inside a ``RichTextBlock``:
a TextRun is plain text (Adaptive Cards apply Markdown to ``TextBlock`` and
fact values, never to a TextRun), so an argument such as ``**APPROVED**`` or
``[click](https://evil)`` shows as typed instead of being formatted or
linked. The view (:mod:`tapgate.delivery.presentation`) is already masked
with every control character made visible; nothing else needs escaping.

A button is an ``Action.Execute`` (Universal Actions, card version 1.5: the
press arrives as an ``adaptiveCard/action`` invoke that tapgate answers with
the redrawn card) whose ``fallback`` is the same button as an
``Action.Submit`` for clients without Universal Actions. Both carry
``{"tg": "v=1&a=approve&r=<id>"}``: the versioned action strings of
:mod:`tapgate.decisions.buttons`, shared with LINE.

Limits: Power Automate and Copilot Studio cap a card at about 28 KB (Teams
itself takes ~100 KB); tapgate keeps every message under :data:`MAX_BYTES`
so a card is portable, cutting arguments harder until it fits (:func:`fits`).
"""

from __future__ import annotations

import json
from typing import Any

from tapgate.channels.teams.activities import DATA_KEY
from tapgate.delivery.batch_view import BatchView
from tapgate.delivery.presentation import ApprovalView, clip

__all__ = [
    "CARD_TYPE",
    "FACT_MAX",
    "INBOX_TITLE",
    "MAX_BYTES",
    "REASON_MAX",
    "attachment_activity",
    "button",
    "card",
    "closing_facts",
    "fact",
    "fits",
    "line",
    "open_url",
    "opening_facts",
    "reason_input",
]

CARD_TYPE = "application/vnd.microsoft.card.adaptive"
MAX_BYTES = 28 * 1024
"""The largest message tapgate sends to Teams (JSON bytes of the whole activity)."""
INBOX_TITLE = "Open in inbox"
"""The title of the link to the web inbox on an asking card."""
FACT_MAX = 100
REASON_MAX = 200
SUMMARY_MAX = 200
_VERSION = "1.5"
_SCHEMA = "http://adaptivecards.io/schemas/adaptive-card.json"


def line(value: str, **style: Any) -> dict[str, Any]:
    """One paragraph of plain text (a TextRun never renders Markdown)."""
    run = {"type": "TextRun", "text": value, **style}
    return {"type": "RichTextBlock", "inlines": [run]}


def fact(label: str, value: str, max_len: int = FACT_MAX, **style: Any) -> dict[str, Any]:
    """``Label: value`` as one paragraph, the label bold, the value cut to ``max_len``."""
    label_run = {"type": "TextRun", "text": f"{label}: ", "weight": "Bolder"}
    value_run = {"type": "TextRun", "text": clip(value, max_len), **style}
    return {"type": "RichTextBlock", "inlines": [label_run, value_run], "spacing": "None"}


def opening_facts(view: ApprovalView | BatchView, who: str = "Agent") -> list[dict[str, Any]]:
    """Who asked, and in which session (if any)."""
    facts = [fact(who, view.agent)]
    if view.session is not None:
        facts.append(fact("Session", view.session))
    return facts


def closing_facts(
    view: ApprovalView | BatchView, id_label: str = "Request"
) -> list[dict[str, Any]]:
    """When it expires, its short id, and who may decide."""
    expires = view.expires_text + (f" ({view.time_left})" if view.time_left else "")
    facts = [fact("Expires", expires), fact(id_label, view.short_id)]
    if view.approvers:
        facts.append(fact("Approvers", ", ".join(view.approvers)))
    return facts


def button(title: str, action: str, *, style: str = "default") -> dict[str, Any]:
    """An ``Action.Execute`` carrying ``action`` (its inputs sent too), Submit as fallback."""
    data = {DATA_KEY: action}
    submit = {"type": "Action.Submit", "title": title, "data": data, "style": style}
    return {
        "type": "Action.Execute",
        "title": title,
        "verb": "tapgate",
        "data": data,
        "style": style,
        "associatedInputs": "auto",
        "fallback": submit,
    }


def open_url(title: str, url: str) -> dict[str, Any]:
    """A button that opens ``url`` in the browser (no press reaches tapgate)."""
    return {"type": "Action.OpenUrl", "title": title, "url": url}


def reason_input(ident: str, placeholder: str, *, multiline: bool = False) -> dict[str, Any]:
    """A text box whose value a button sends with its press (a deny's reason, an answer)."""
    return {
        "type": "Input.Text",
        "id": ident,
        "placeholder": placeholder,
        "isMultiline": multiline,
        "maxLength": 2000 if multiline else 500,
    }


def card(body: list[dict[str, Any]], actions: list[dict[str, Any]]) -> dict[str, Any]:
    """An Adaptive Card 1.5 with ``body`` and (when there are any) ``actions``."""
    out: dict[str, Any] = {
        "type": "AdaptiveCard",
        "$schema": _SCHEMA,
        "version": _VERSION,
        "body": body,
    }
    if actions:
        out["actions"] = actions
    return out


def attachment_activity(content: dict[str, Any], summary: str) -> dict[str, Any]:
    """A message activity carrying one card; ``summary`` is the notification's line."""
    return {
        "type": "message",
        "summary": clip(summary, SUMMARY_MAX),
        "attachments": [{"contentType": CARD_TYPE, "content": content}],
    }


def fits(activity: dict[str, Any]) -> bool:
    """Whether ``activity`` is within :data:`MAX_BYTES` as it is sent."""
    return len(json.dumps(activity, ensure_ascii=False).encode()) <= MAX_BYTES
