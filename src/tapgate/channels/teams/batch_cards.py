"""The Adaptive Card of a batch: every call of one agent turn, decided one by one or all at once.

Each open call has its own Approve / Deny (the single request's action
strings); the card's own buttons act on every call still open ("Approve
all", "Deny all", "Allow all for session": the batch action strings of
:mod:`tapgate.decisions.buttons`). One reason box serves every Deny on the
card. A decided call shows its outcome line instead of buttons. Arguments are
cut harder per call than on a single card, and harder again until the whole
message fits Teams' limit (:data:`~.card_parts.MAX_BYTES`).
"""

from __future__ import annotations

from typing import Any

from tapgate.channels.teams.card_parts import (
    INBOX_TITLE,
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
from tapgate.decisions.buttons import batch_postback_data, postback_data
from tapgate.decisions.chat_commands import inbox_page
from tapgate.delivery.batch_view import BatchCall, BatchView
from tapgate.delivery.presentation import fit_text

__all__ = ["render_batch"]

_CUTS = ((600, 10), (200, 4), (60, 1))


def render_batch(
    batch: BatchView, *, notice: str | None = None, public_url: str | None = None
) -> dict[str, Any]:
    """The message activity showing ``batch`` as it is now; ``notice`` goes on top.

    With ``public_url``, an open batch ends with "Open in inbox" (its pending page).
    """
    inbox = inbox_page(public_url)
    count = len(batch.calls)
    summary = f"{count} calls from {batch.agent} need approval (batch {batch.short_id})"
    for chars, lines in _CUTS:
        body: list[dict[str, Any]] = [
            line("Approval needed", isSubtle=True),
            line(f"{count} calls from {batch.agent}", weight="Bolder", size="Large"),
            *opening_facts(batch),
            *closing_facts(batch, "Batch"),
        ]
        if notice:
            body.insert(0, line(notice, weight="Bolder", color="Attention"))
        for index, call in enumerate(batch.calls, 1):
            body.append(_call(index, call, chars, lines))
        actions: list[dict[str, Any]] = []
        if batch.open_calls:
            body.append(reason_input("reason", "Reason (sent with Deny; optional)"))
            actions = _batch_buttons(batch)
            if inbox is not None:
                actions.append(open_url(INBOX_TITLE, inbox))
        activity = attachment_activity(card(body, actions), summary)
        if fits(activity):
            return activity
    raise ValueError(f"the card of batch {batch.batch_id} does not fit Teams' limit")


def _call(index: int, call: BatchCall, chars: int, lines: int) -> dict[str, Any]:
    view = call.view
    text = fit_text(view.body.removesuffix("\n"), max_len=chars, max_lines=lines)
    items: list[dict[str, Any]] = [
        line(f"{index}. {view.tool} ({view.risk})", weight="Bolder"),
        line(text or "—", fontType="Monospace"),
    ]
    if call.outcome is not None:
        items.append(line(call.outcome, weight="Bolder"))
        if call.reason:
            items.append(fact("Reason", call.reason))
    else:
        rid = view.request_id
        items.append(
            {
                "type": "ActionSet",
                "actions": [
                    button("Approve", postback_data("approve", rid), style="positive"),
                    button("Deny", postback_data("deny", rid), style="destructive"),
                ],
            }
        )
    return {"type": "Container", "separator": True, "spacing": "Medium", "items": items}


def _batch_buttons(batch: BatchView) -> list[dict[str, Any]]:
    bid = batch.batch_id
    actions = [
        button("Approve all", batch_postback_data("approve_all", bid), style="positive"),
        button("Deny all", batch_postback_data("deny_all", bid), style="destructive"),
    ]
    if batch.can_allow_session:
        actions.append(
            button("Allow all for session", batch_postback_data("approve_all_session", bid))
        )
    return actions
