"""Slack Block Kit rendering of a batch card: every call with its own buttons, and "Approve all".

Escaping is the single card's (:mod:`tapgate.channels.slack.blocks`): the
same helpers put every piece of agent text in inline code, code blocks or
``plain_text``, escaped. Each call's buttons are the single card's own
(``action_id`` ``tapgate_approve`` …, ``value`` the request id), so a
per-call tap is an ordinary tap; the batch's buttons carry the batch id
(:data:`~tapgate.decisions.buttons.SLACK_BATCH_ACTION_IDS`).

Limits (Slack's documented maximum → what we use, and why):

- blocks per message 50 → header, facts, the batch's buttons, then two
  blocks per call (its text, its buttons or outcome) for the first
  :data:`FULL_CALLS` calls; any further calls (a batch holds up to 50) are
  listed one line each in compact sections, masked and escaped, and are
  decided by "Approve all" / "Deny all" (the section says so). The lines are
  cut, on their escaped length, so that the sections fit the blocks left:
  escaping can make a line five times longer (``&`` → ``&amp;``), and a
  message of 51 blocks is refused whole;
- a call's text ≤ 3000 (a section's limit) and shrinks with the number of
  calls, so that the whole card stays within ``MESSAGE_TEXT_MAX``;
- the text of all blocks together: not documented, but Slack refuses a
  ``chat.postMessage`` whose blocks hold more than about 12,000 characters of
  text (``msg_blocks_too_long``; reported at 11,341 and at 13,297 characters
  in slackapi/bolt-js#2867 and #2509, where Slack's staff named "12,000 text
  characters with a buffer for block containers"). A card of long calls
  reached 28,000, refused whole, so the approvers saw nothing. The card is
  rendered with a per-call share of ``MESSAGE_TEXT_MAX``, measured, and
  rendered again with smaller shares until it fits (never below
  ``CALL_TEXT_FLOOR``, which still fits: 20 full calls and 30 further ones);
- confirm dialog text 300;  button value: the id (≤ 64).
"""

from __future__ import annotations

from typing import Any

from tapgate.channels.slack.blocks import (
    _LOOKALIKE_BACKTICK,
    _RISK_ICONS,
    CONFIRM_TEXT_MAX,
    FACT_MAX,
    FALLBACK_TEXT_MAX,
    SECTION_TEXT_MAX,
    _actions,
    _code,
    _escaped_clip,
    _header,
    _inline,
    escape,
)
from tapgate.decisions.buttons import SLACK_BATCH_ACTION_IDS, BatchAction
from tapgate.delivery.batch_view import BatchCall, BatchView
from tapgate.delivery.inbox_button import slack_inbox_button
from tapgate.delivery.presentation import clip, fit_text

__all__ = [
    "ACTION_APPROVE_ALL",
    "ACTION_APPROVE_ALL_SESSION",
    "ACTION_DENY_ALL",
    "FULL_CALLS",
    "MESSAGE_TEXT_MAX",
    "block_text_length",
    "render_slack_batch",
]

ACTION_APPROVE_ALL = SLACK_BATCH_ACTION_IDS["approve_all"]
ACTION_DENY_ALL = SLACK_BATCH_ACTION_IDS["deny_all"]
ACTION_APPROVE_ALL_SESSION = SLACK_BATCH_ACTION_IDS["approve_all_session"]

FULL_CALLS = 20
"""Calls shown with their own buttons: 3 + 2 × 20 blocks leaves room for the compact rest."""
MESSAGE_TEXT_MAX = 10_000
"""Text across all of a card's blocks: below where Slack starts refusing (~11,300 – 13,300)."""
CALL_TEXT_FLOOR = 180
"""The least a full call's section is given; a further call's line gets a third of a call's share.

At the floor a card of 50 calls holds ~9,500 characters: 20 sections, their
buttons (~190 each, the confirm dialog included), 30 lines and the rest.
"""
BUTTONS_TEXT = 200
"""About the text of one call's buttons and their confirm dialog: a first guess at the share."""
ARGUMENTS_CUT = "_(arguments too long to show on this card)_"
"""What a call's section says when its share cannot hold even a cut of its escaped arguments."""
COMPACT_CALL_MAX = 300
BLOCKS_MAX = 50
"""Slack's blocks per message: a message with more is refused (``invalid_blocks``)."""


def render_slack_batch(batch: BatchView, *, inbox: bool = False) -> dict[str, Any]:
    """The ``chat.postMessage`` / ``chat.update`` payload of a batch card, as the batch is now.

    Open calls have their buttons, decided ones their outcome line; the
    batch's own buttons stay while any call is open, with "Open inbox" after
    them when ``inbox``. Each call's share of the card is sized so that all
    its text fits ``MESSAGE_TEXT_MAX``, and shrunk (rendered again) if it did not.
    """
    full = min(len(batch.calls), FULL_CALLS)
    shares = full + max(len(batch.calls) - FULL_CALLS, 0) / 3  # a further call: a third
    fixed = 400 + BUTTONS_TEXT * full  # header, facts, the batch's buttons; each call's
    share = int(min(SECTION_TEXT_MAX, max(CALL_TEXT_FLOOR, (MESSAGE_TEXT_MAX - fixed) / shares)))
    while True:
        payload = _render(batch, inbox=inbox, share=share)
        total = block_text_length(payload["blocks"])
        if total <= MESSAGE_TEXT_MAX or share == CALL_TEXT_FLOOR:
            return payload
        share = max(CALL_TEXT_FLOOR, share - int((total - MESSAGE_TEXT_MAX) / shares) - 1)


def block_text_length(node: Any) -> int:
    """Characters of text in ``node``'s blocks: every ``text`` string, at any depth.

    How Slack's undocumented cap is measured by those who met it; button
    labels and confirm dialogs count, as they are text too.
    """
    if isinstance(node, dict):
        return sum(
            len(value) if key == "text" and isinstance(value, str) else block_text_length(value)
            for key, value in node.items()
        )
    if isinstance(node, list):
        return sum(block_text_length(value) for value in node)
    return 0


def _render(batch: BatchView, *, inbox: bool, share: int) -> dict[str, Any]:
    """The card with ``share`` characters for each full call (a third of it per further call)."""
    calls = batch.calls
    live = bool(batch.open_calls)
    title = "Approval needed" if live else "Decided"
    blocks: list[dict[str, Any]] = [
        _header(f"{title}: {len(calls)} calls from {batch.agent}"),
        _facts(batch, live=live),
    ]
    for number, call in enumerate(calls[:FULL_CALLS], start=1):
        blocks.append(_call_section(number, call, share))
        blocks.append(_actions(call.view) if call.is_open else _outcome(call, share))
    room = BLOCKS_MAX - len(blocks) - (1 if live else 0)  # the batch's buttons come last
    line_max = min(COMPACT_CALL_MAX, share // 3)
    blocks += _compact(calls[FULL_CALLS:], first=FULL_CALLS + 1, room=room, line_max=line_max)
    payload = {"text": _fallback(batch, title), "blocks": blocks}
    if live:
        blocks.append(_batch_actions(batch))
        payload = slack_inbox_button(payload, inbox)
    return payload


def _facts(batch: BatchView, *, live: bool) -> dict[str, Any]:
    expires = batch.expires_text + (f" ({batch.time_left})" if live and batch.time_left else "")
    parts = [f"Agent {_inline(batch.agent)}"]
    if batch.session is not None:
        parts.append(f"session {_inline(batch.session)}")
    parts += [f"batch {_inline(batch.short_id)}", f"expires {escape(expires)}"]
    if batch.approvers:
        parts.append(f"approvers {escape(clip(', '.join(batch.approvers), 120))}")
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": " · ".join(parts)}]}


def _call_section(number: int, call: BatchCall, budget: int) -> dict[str, Any]:
    """A call's facts and arguments in ``budget`` characters (escaped).

    The facts are cut on their escaped length to an eighth of the budget each
    (at most ``FACT_MAX``), so the title always leaves room for the arguments:
    a tool name or path of ``&`` escapes to five times its length, and a title
    longer than the budget left no room at all (the card failed to render).
    """
    view = call.view
    icon = _RISK_ICONS.get(view.risk, "")
    most = min(FACT_MAX, budget // 8)
    tool, rule = _code_fact(view.tool, most), _code_fact(view.rule, most)
    title = f"*{number}.* {tool} {icon} {_inline(view.risk)} · rule {rule}"
    path = f" {_code_fact(view.path, most)}" if view.path is not None else ""
    title += f"\n*{view.label}*{path}"
    body = view.body if view.extra is None else f"{view.body}\n\nOther arguments:\n{view.extra}"
    try:
        text = fit_text(
            body,
            max_len=budget,
            max_lines=max(6, budget // 60),
            encode=lambda t: f"{title}\n{_code(t)}",
        )
    except ValueError:  # a share too small for any of these arguments once escaped
        text = f"{title}\n{ARGUMENTS_CUT}"
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


def _outcome(call: BatchCall, share: int) -> dict[str, Any]:
    """A decided call's outcome and reason, within its ``share`` of the card."""
    most = min(300, share // 2)
    elements = [
        {"type": "plain_text", "text": _escaped_clip(call.outcome or "", most, place="plain_text")}
    ]
    if call.reason:
        reason = _escaped_clip(f"Reason: {call.reason}", most, place="plain_text")
        elements.append({"type": "plain_text", "text": reason})
    block_id = f"tapgate_resolved:{call.view.request_id}"
    return {"type": "context", "block_id": block_id, "elements": elements}


def _compact(
    calls: tuple[BatchCall, ...], *, first: int, room: int, line_max: int
) -> list[dict[str, Any]]:
    """Calls past :data:`FULL_CALLS`: one line each, in at most ``room`` sections of ≤ 3000.

    Each line is cut to ``line_max`` and to an equal share of those sections,
    measured escaped, so the packing below can never need one more block
    than Slack allows.
    """
    if not calls:
        return []
    per_section = -(-(len(calls) + 1) // max(room, 1))
    line_max = min(line_max, SECTION_TEXT_MAX // per_section - 1)
    lines = ["*Further calls* (decided by Approve all / Deny all):"]
    lines += [_compact_line(n, call, line_max) for n, call in enumerate(calls, start=first)]
    sections: list[list[str]] = [[]]
    for line in lines:
        if sum(len(x) + 1 for x in sections[-1]) + len(line) > SECTION_TEXT_MAX:
            sections.append([])
        sections[-1].append(line)
    return [
        {"type": "section", "text": {"type": "mrkdwn", "text": "\n".join(part)}}
        for part in sections
    ]


def _compact_line(number: int, call: BatchCall, line_max: int) -> str:
    """``*21.* `tool` `arguments…` outcome``, at most ``line_max`` characters once escaped.

    The arguments include "Other arguments" (folded onto the line), as a full
    call's section does: "Approve all" decides these calls too, so no argument
    may be left off without a visible cut.
    """
    view = call.view
    body = view.body
    if view.extra is not None:
        body += " · Other arguments: " + " ".join(view.extra.split())
    head = f"*{number}.* {_code_fact(view.tool, min(60, line_max // 3))} "
    most = min(80, line_max // 4)
    state = f" {_escaped_clip(call.outcome, most, place='mrkdwn')}" if call.outcome else ""
    room = max(line_max - len(head) - len(state) - 2, 20)
    shown = body.replace("`", _LOOKALIKE_BACKTICK)
    shown = _escaped_clip(shown, room, place="code")
    return f"{head}`{shown or ' '}`{state}"


def _code_fact(value: str, max_len: int) -> str:
    """``value`` as inline code of at most ``max_len`` characters once escaped."""
    text = _escaped_clip(value.replace("`", _LOOKALIKE_BACKTICK), max_len - 2, place="code")
    return f"`{text}`" if text.strip() else "—"


def _batch_actions(batch: BatchView) -> dict[str, Any]:
    count = len(batch.open_calls)
    approve = _button("Approve all", "approve_all", batch.batch_id, style="primary")
    approve["confirm"] = _confirm(
        f"Approve all {count}?",
        # All of each call, as the agent sent it: the card may cut a call to fit.
        f"Approve the {count} open calls of this batch, each with all its arguments, "
        "also where this card cuts them (…).",
        "Approve all",
    )
    buttons = [approve, _button("Deny all", "deny_all", batch.batch_id, style="danger")]
    if batch.can_allow_session:
        session = _button("Allow all for session", "approve_all_session", batch.batch_id)
        session["confirm"] = _confirm(
            "Allow all for this session?",
            f"Approve the {count} open calls and every later identical call "
            f"from {clip(batch.agent, 60)} in session {clip(batch.session or '', 60)}.",
            "Allow for session",
        )
        buttons.append(session)
    return {"type": "actions", "block_id": f"tapgate_batch:{batch.batch_id}", "elements": buttons}


def _button(
    label: str, action: BatchAction, batch_id: str, *, style: str | None = None
) -> dict[str, Any]:
    button: dict[str, Any] = {
        "type": "button",
        "action_id": SLACK_BATCH_ACTION_IDS[action],
        "text": {"type": "plain_text", "text": label},
        "value": batch_id,
    }
    if style is not None:
        button["style"] = style
    return button


def _confirm(title: str, text: str, confirm: str) -> dict[str, Any]:
    return {
        "title": {"type": "plain_text", "text": title},
        "text": {
            "type": "plain_text",
            "text": _escaped_clip(text, CONFIRM_TEXT_MAX, place="plain_text"),
        },
        "confirm": {"type": "plain_text", "text": confirm},
        "deny": {"type": "plain_text", "text": "Cancel"},
    }


def _fallback(batch: BatchView, headline: str) -> str:
    """The notification text: who, how many, which tools; never the arguments."""
    tools = ", ".join(dict.fromkeys(c.view.tool for c in batch.calls))
    text = (
        f"{headline}: {len(batch.calls)} calls from {clip(batch.agent, 120)} "
        f"({clip(tools, 300)}), batch {batch.short_id}, expires {batch.expires_text}"
    )
    return _escaped_clip(text, FALLBACK_TEXT_MAX, place="mrkdwn")  # formatted by Slack
