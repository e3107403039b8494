"""A batch of calls as one Discord card: every call listed, "Approve all", and per-call buttons.

Escaping is the single card's (:mod:`.text`). Layout within Discord's limits:

- the embed's description (4096) lists every call, numbered, each with its
  arguments in a code block or, once decided, its outcome line. Each call's
  share of :data:`DESCRIPTION_MAX` shrinks with the number of calls and the
  card is measured and drawn again with smaller shares until it fits;
- five action rows of at most five buttons: the first holds "Approve all",
  "Deny all" (which asks for a reason in a modal), "Allow all for session"
  where it means something and "Open inbox" when the web inbox has a public
  URL; the
  other four hold an Approve / Deny pair for each of the first
  :data:`CALL_BUTTONS` open calls, two calls a row. Further open calls are
  decided with the batch's buttons or in the web inbox; the card says so.

Per-call buttons are the single card's own (``v=1&a=approve&r=<id>``), so a
per-call press is an ordinary press; the batch's carry the batch id
(``v=1&a=approve_all&b=<id>``).
"""

from __future__ import annotations

from typing import Any

from tapgate.channels.discord.cards import BUTTON, NO_MENTIONS, STYLE, button, inbox_button
from tapgate.channels.discord.text import code_block, escaped_clip
from tapgate.decisions.buttons import BatchAction, batch_postback_data
from tapgate.delivery.batch_view import BatchCall, BatchView
from tapgate.delivery.presentation import clip, fit_text

__all__ = ["CALL_BUTTONS", "DESCRIPTION_MAX", "render_discord_batch"]

DESCRIPTION_MAX = 3800
"""Of the description's 4096: room left for the note on calls without buttons."""
CALL_BUTTONS = 8
"""Open calls with their own Approve / Deny: four rows of two pairs."""
_CALL_SHARE_MAX = 1500
_CALL_SHARE_MIN = 60


def render_discord_batch(batch: BatchView, *, inbox: bool = False) -> dict[str, Any]:
    """The Create (or Edit) Message body for ``batch`` as it is now (``inbox``: "Open inbox")."""
    open_calls = batch.open_calls
    share = min(_CALL_SHARE_MAX, max(_CALL_SHARE_MIN, DESCRIPTION_MAX // len(batch.calls)))
    while True:
        description = "\n".join(_call(i, c, share) for i, c in enumerate(batch.calls, 1))
        if len(description) <= DESCRIPTION_MAX or share <= _CALL_SHARE_MIN:
            break
        share = max(_CALL_SHARE_MIN, share * DESCRIPTION_MAX // len(description) - 10)
    description = description[:DESCRIPTION_MAX]  # the floor share of 50 calls still fits
    if len(open_calls) > CALL_BUTTONS:
        description += (
            "\n\nCalls without buttons here: decide them with Approve all / Deny all, "
            "or in the web inbox."
        )
    total, left = len(batch.calls), len(open_calls)
    title = f"Batch of {total} calls from {batch.agent}" + (f" ({left} open)" if left else "")
    facts = [("Agent", batch.agent), ("Batch", batch.short_id), ("Expires", batch.expires_text)]
    if batch.session is not None:
        facts.insert(1, ("Session", batch.session))
    if batch.approvers:
        facts.append(("Approvers", ", ".join(batch.approvers)))
    embed = {
        "title": escaped_clip(title, 256),
        "description": description,
        "color": 0x5865F2 if left else 0x95A5A6,
        "fields": [
            {"name": n, "value": escaped_clip(v, 120) or "—", "inline": True} for n, v in facts
        ],
        "footer": {"text": clip(f"tapgate · batch {batch.batch_id}", 200)},
    }
    return {
        "content": escaped_clip(f"{title} ({batch.short_id})", 300),
        "embeds": [embed],
        "components": _rows(batch, inbox) if left else [],
        "allowed_mentions": NO_MENTIONS,
    }


def _call(number: int, call: BatchCall, share: int) -> str:
    view = call.view
    heading = f"**{number}\\. {escaped_clip(view.tool, 100)}**"
    if call.outcome is not None:
        line = f"{heading} {escaped_clip(call.outcome, 200)}"
        if call.reason:
            line += " " + escaped_clip(f"Reason: {call.reason}", 200)
        return line
    return fit_text(
        view.body,
        max_len=max(share, 60),
        max_lines=12,
        encode=lambda text: f"{heading}\n{code_block(text)}",
    )


def _rows(batch: BatchView, inbox: bool) -> list[dict[str, Any]]:
    first = _batch_buttons(batch) + ([inbox_button()] if inbox else [])
    rows = [{"type": 1, "components": first}]
    pairs: list[dict[str, Any]] = []
    numbered = [(i, c) for i, c in enumerate(batch.calls, 1) if c.is_open][:CALL_BUTTONS]
    for number, call in numbered:
        rid = call.view.request_id
        pairs += [
            button(f"Approve {number}", "approve", rid, "success"),
            button(f"Deny {number}…", "deny", rid, "danger"),
        ]
    for start in range(0, len(pairs), 4):
        rows.append({"type": 1, "components": pairs[start : start + 4]})
    return rows


def _batch_buttons(batch: BatchView) -> list[dict[str, Any]]:
    wanted: list[tuple[str, BatchAction, str]] = [
        ("Approve all", "approve_all", "success"),
        ("Deny all", "deny_all", "danger"),
    ]
    if batch.can_allow_session:
        wanted.append(("Allow all for session", "approve_all_session", "secondary"))
    return [
        {
            "type": BUTTON,
            "style": STYLE[style],
            "label": label,
            "custom_id": batch_postback_data(action, batch.batch_id),
        }
        for label, action, style in wanted
    ]
