"""LINE's ``grants``: a Flex listing with a Revoke button (postback) per grant, and the revoke.

Who may see and revoke what is :mod:`tapgate.decisions.chat_grants`; this module
only speaks LINE::

    "grants" (typed, 1:1) ─► core.own_grants.list_own ─► reply: a Flex bubble, one row
                                                        per grant, a Revoke postback each
    Revoke postback ─(stored before the 200 by the webhook)─► core.own_grants.revoke_own
                    ─► reply: the sentence (and the grants still active, if any)

LINE sends messages that cannot be edited, so a revoke answers with a new
listing rather than changing the old one; a second tap on an old Revoke
button is told the grant is gone.

Limits (LINE's → ours), counted in UTF-16 code units as LINE counts them:
``altText`` 1500 → 400; bubble JSON 30 KB → :data:`LIST_MAX` rows of at
most :data:`LINE_MAX` units each (≤ ~20 KB even if every unit were sent as a
``\\uXXXX`` escape); postback ``data`` 300 → ``v=1&a=revoke&g=<id>`` (≤ 79);
action ``label`` 20 → "Revoke"; ``displayText`` 300 → "Revoke".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tapgate.decisions.buttons import revoke_postback_data
from tapgate.decisions.chat_grants import Asker, Listing, list_own, revoke_own
from tapgate.gate.gate import Gate

__all__ = ["LINE_MAX", "LIST_MAX", "SUMMARY", "grants_answer", "listing_flex", "revoke_answer"]

LIST_MAX = 10
"""Rows one listing shows (the newest grants); the heading says how many more."""
LINE_MAX = 240
_ALT_TEXT_MAX = 400
_RED = "#D93025"
SUMMARY = "your grants (Always allow, Allow for session), each with a Revoke button"


async def grants_answer(gate: Gate, user_id: str) -> str | Sequence[Mapping[str, Any]]:
    """The typed ``grants``: the sender's active grants as a Flex listing, or why there are none."""
    listing = await list_own(gate, Asker(channel="line", user_id=user_id), limit=LIST_MAX)
    return [listing_flex(listing)] if listing.items else listing.message


async def revoke_answer(
    gate: Gate, user_id: str, grant_id: str, event: str
) -> str | Sequence[Mapping[str, Any]] | None:
    """Apply a Revoke postback once per ``event``; what to reply (``None``: a redelivery)."""
    asker = Asker(channel="line", user_id=user_id)
    done = await revoke_own(gate, asker, grant_id, event=event)
    if done.kind == "duplicate":
        return None
    if done.kind != "revoked":
        return done.message
    listing = await list_own(gate, asker, limit=LIST_MAX)
    if not listing.items:
        return done.message
    return [{"type": "text", "text": done.message}, listing_flex(listing)]


def listing_flex(listing: Listing) -> dict[str, Any]:
    """One Flex bubble: the heading, then a row per grant with its Revoke button."""
    rows: list[dict[str, Any]] = [
        {"type": "text", "text": listing.message, "weight": "bold", "wrap": True}
    ]
    for item in listing.items:
        rows.append({"type": "separator"})
        rows.append(
            {
                "type": "box",
                "layout": "horizontal",
                "spacing": "md",
                "contents": [
                    {
                        "type": "text",
                        "text": _fit(item.line, LINE_MAX),
                        "wrap": True,
                        "size": "sm",
                        "flex": 3,
                        "gravity": "center",
                    },
                    {
                        "type": "button",
                        "style": "primary",
                        "color": _RED,
                        "height": "sm",
                        "flex": 2,
                        "gravity": "center",
                        "action": {
                            "type": "postback",
                            "label": "Revoke",
                            "data": revoke_postback_data(item.grant.id),
                            "displayText": "Revoke",
                        },
                    },
                ],
            }
        )
    return {
        "type": "flex",
        "altText": _fit(listing.message, _ALT_TEXT_MAX),
        "contents": {
            "type": "bubble",
            "size": "giga",
            "body": {"type": "box", "layout": "vertical", "spacing": "md", "contents": rows},
        },
    }


def _fit(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` UTF-16 code units (LINE's measure), with an ellipsis."""
    if len(text.encode("utf-16-le")) // 2 <= limit:
        return text
    out: list[str] = []
    used = 0
    for char in text:
        width = 2 if ord(char) > 0xFFFF else 1
        if used + width > limit - 1:
            break
        out.append(char)
        used += width
    return "".join(out) + "…"
