"""LINE Flex rendering of a batch card: one bubble, or a carousel when the calls do not fit.

LINE shows Flex text as plain text, so nothing is escaped; every call's view
is masked and made visible by the presentation model, as a single card's.
Each call has the single card's own postbacks (``v=1&a=approve&r=<id>``), so
a per-call tap is an ordinary tap; the batch's buttons carry
``v=1&a=approve_all&b=<batch id>`` (≤ 101 characters against 300).

Limits (LINE's documented maximum → what we use, and why). LINE counts text
in UTF-16 units, and line-bot-sdk sends JSON with ``ensure_ascii``, so a
message's size is measured here as that JSON, every non-ASCII character
counted as its ``\\uXXXX`` escape:

- a bubble 30 KB → ≤ :data:`BUBBLE_BYTES`;  a carousel 50 KB (read as
  50,000 bytes) and 12 bubbles → ≤ :data:`MESSAGE_BYTES`,
  :data:`CALLS_PER_BUBBLE` calls a bubble (50 calls fill 10 bubbles);
- each call's arguments start at ``ARGS_LADDER[0]`` units and lines and step
  down the ladder until the card fits one message; a cut always says what it
  cut, and on the last steps the arguments are folded onto one line so what
  is left is arguments, not indentation (where emoji, two units each, leave
  too little room to count the cut, it ends in "…");
- a card that fits no single message even then (dozens of calls of
  non-ASCII text, where every character costs six bytes) becomes up to
  :data:`PUSH_MESSAGES_MAX` carousels in ONE push (LINE takes five messages
  per push): one request, one retry key, one turn of the pacing;
- ``altText`` 400 as for a single card;  button ``label`` 20 → "Allow all
  (session)" (20).
"""

from __future__ import annotations

import json
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
    text,
    utf16_len,
)
from tapgate.decisions.buttons import BatchAction, batch_postback_data
from tapgate.delivery.batch_view import BatchCall, BatchView
from tapgate.delivery.inbox_button import line_inbox_button
from tapgate.delivery.presentation import clip, fit_text

__all__ = [
    "ARGS_LADDER",
    "BUBBLE_BYTES",
    "CALLS_PER_BUBBLE",
    "MESSAGE_BYTES",
    "PUSH_MESSAGES_MAX",
    "message_bytes",
    "render_line_batch",
]

CALLS_PER_BUBBLE = 5
BUBBLE_BYTES = 28_000
MESSAGE_BYTES = 50_000
CAROUSEL_MAX = 12
PUSH_MESSAGES_MAX = 5
ARGS_LADDER = ((600, 12), (300, 6), (160, 3), (100, 2), (80, 1))
"""(UTF-16 units, lines) of each call's arguments, tried in turn until the card fits."""
_FOLD_AT = 3  # from this many lines down, arguments are folded onto one line


def message_bytes(message: dict[str, Any]) -> int:
    """The size LINE sees: the JSON as line-bot-sdk sends it (``ensure_ascii``)."""
    return len(json.dumps(message).encode())


def render_line_batch(batch: BatchView, *, inbox: bool = False) -> list[dict[str, Any]]:
    """The Flex message(s) of one push for a batch card: one bubble for up to five calls,
    else a carousel; only past one message's size, several carousels (see above).
    ``inbox`` adds "Open inbox" under the batch's own buttons.

    Raises ``ValueError`` if even that cannot hold the card (not within ``MAX_CALLS``).
    """
    bubbles: list[dict[str, Any]] = []
    for max_units, max_lines in ARGS_LADDER:
        bubbles = [
            _bubble(batch, start, max_units=max_units, max_lines=max_lines, inbox=inbox)
            for start in range(0, len(batch.calls), CALLS_PER_BUBBLE)
        ]
        if max(message_bytes(b) for b in bubbles) > BUBBLE_BYTES:
            continue
        messages = _pack(batch, bubbles)
        if len(messages) == 1:
            return messages
    messages = _pack(batch, bubbles)
    if len(messages) > PUSH_MESSAGES_MAX:
        raise ValueError(f"batch {batch.batch_id} does not fit one LINE push")
    return messages


def _pack(batch: BatchView, bubbles: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Bubbles into as few messages as LINE's sizes allow, in order."""
    if len(bubbles) == 1:
        return [{"type": "flex", "altText": _alt(batch), "contents": bubbles[0]}]
    groups: list[list[dict[str, Any]]] = [[]]
    for bubble in bubbles:
        trial = _carousel(batch, [*groups[-1], bubble])
        if groups[-1] and (len(groups[-1]) == CAROUSEL_MAX or message_bytes(trial) > MESSAGE_BYTES):
            groups.append([])
        groups[-1].append(bubble)
    return [_carousel(batch, group) for group in groups]


def _carousel(batch: BatchView, bubbles: list[dict[str, Any]]) -> dict[str, Any]:
    contents = {"type": "carousel", "contents": bubbles}
    return {"type": "flex", "altText": _alt(batch), "contents": contents}


def _alt(batch: BatchView) -> str:
    tools = ", ".join(dict.fromkeys(c.view.tool for c in batch.calls))
    alt = f"Approval needed: {len(batch.calls)} calls by {batch.agent} ({tools})"
    alt += f", batch {batch.short_id}"
    return clip(alt, ALT_TEXT_MAX, measure=utf16_len)


def _bubble(
    batch: BatchView, start: int, *, max_units: int, max_lines: int, inbox: bool = False
) -> dict[str, Any]:
    calls = batch.calls[start : start + CALLS_PER_BUBBLE]
    end = start + len(calls)
    first = start == 0
    heading = (
        f"{len(batch.calls)} calls from {batch.agent}" if first else f"Calls {start + 1}–{end}"
    )
    body: list[dict[str, Any]] = _facts(batch) if first else []
    for number, call in enumerate(calls, start=start + 1):
        body += _call(number, call, max_units=max_units, max_lines=max_lines)
    bubble: dict[str, Any] = {
        "type": "bubble",
        "header": box(
            [
                text("Approval needed" if batch.open_calls else "Decided", size="sm", color=MUTED),
                text(fact(heading), size="lg", weight="bold", wrap=True),
            ]
        ),
        "body": box(body, spacing="sm"),
    }
    if first and batch.open_calls:
        bubble["footer"] = box(_batch_buttons(batch), spacing="sm")
        if inbox:
            shown: dict[str, Any] = line_inbox_button({"contents": bubble}, inbox)["contents"]
            return shown
    return bubble


def _facts(batch: BatchView) -> list[dict[str, Any]]:
    return opening_rows(batch) + closing_rows(batch, "Batch")


def _call(number: int, call: BatchCall, *, max_units: int, max_lines: int) -> list[dict[str, Any]]:
    view = call.view
    title = f"{number}. {view.tool}"
    label = view.label if view.path is None else f"{view.label}: {view.path}"
    body = view.body if view.extra is None else f"{view.body}\n\nOther arguments:\n{view.extra}"
    if max_lines < _FOLD_AT:
        body = " ".join(body.split())
    try:
        shown = fit_text(
            body.removesuffix("\n"), max_len=max_units, max_lines=max_lines, measure=utf16_len
        )
    except ValueError:  # emoji-dense text on the last rungs: "… N more characters" leaves
        # room for under 40 characters, too few for a counted cut; "…" still says it was cut
        shown = clip(body, max_units, measure=utf16_len)
    # One muted line for risk, rule and label: rows of their own cost ~300 bytes a
    # call, which is what decides whether 50 calls fit one message.
    facts = f"{view.risk} · rule {fact(view.rule, 60)} · {fact(label, 80)}"
    parts: list[dict[str, Any]] = [
        {"type": "separator", "margin": "md"},
        text(fact(title), size="sm", weight="bold", wrap=True, margin="md"),
        text(facts, size="xs", color=RISK_COLORS.get(view.risk, MUTED), wrap=True),
        text(shown or "—", size="sm", wrap=True),
    ]
    if call.is_open:
        approve = call_button(
            "Approve", "approve", view, f"Approve {view.short_id}", style="primary"
        )
        deny = call_button(
            "Deny", "deny", view, f"Deny {view.short_id}", style="primary", color=RED
        )
        parts.append({"type": "box", "layout": "horizontal", "contents": [approve, deny]})
    else:
        parts.append(
            text(fact(call.outcome or "", REASON_MAX), size="sm", weight="bold", wrap=True)
        )
    return parts


def _batch_buttons(batch: BatchView) -> list[dict[str, Any]]:
    """The buttons deciding every open call at once (``v=1&a=<action>&b=<batch id>``)."""
    count = len(batch.open_calls)

    def data(action: BatchAction) -> str:
        return batch_postback_data(action, batch.batch_id)

    approve = postback_button(
        "Approve all", data("approve_all"), shown=f"Approve all {count}", style="primary"
    )
    deny = postback_button(
        "Deny all", data("deny_all"), shown=f"Deny all {count}", color=RED, style="primary"
    )
    buttons = [approve, deny]
    if batch.can_allow_session:
        shown = f"Allow all {count} for this session"
        buttons.append(
            postback_button("Allow all (session)", data("approve_all_session"), shown=shown)
        )
    return buttons
