"""Batch card rendering: one Slack message, one LINE bubble or carousel, one console block.

Snapshots live in ``tests/snapshots/render/`` beside the single cards'
(``UPDATE_SNAPSHOTS=1`` regenerates them; review the diff). Every card is also
checked by the SDKs' own models and against the platforms' limits, for the
largest batch (50 calls) of the longest, least ASCII arguments.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
from linebot.v3.messaging import FlexMessage

from tapgate.channels.console.notifier import render_console_batch
from tapgate.channels.line.batch_flex import (
    BUBBLE_BYTES,
    MESSAGE_BYTES,
    PUSH_MESSAGES_MAX,
    render_line_batch,
)
from tapgate.channels.line.flex import utf16_len
from tapgate.channels.slack.batch_blocks import (
    FULL_CALLS,
    MESSAGE_TEXT_MAX,
    block_text_length,
    render_slack_batch,
)
from tapgate.decisions.buttons import parse_batch_postback_data, parse_postback_data
from tapgate.delivery.batch_view import present_batch
from tapgate.gate.batching import MAX_CALLS
from tapgate.gate.models import Request
from tests.delivery.test_render import (
    AWS_KEY,
    T0,
    assert_snapshot,
    assert_valid_slack,
    make_request,
    postback_actions,
    walk,
)

BATCH_ID = "QmF0Y2gtb2YtY2FsbHMtMDE"


def member(n: int, tool: str, arguments: dict[str, Any], **overrides: Any) -> Request:
    request_id = f"Req{n:02d}" + "x" * 17
    return make_request(tool, arguments, id=request_id, batch_id=BATCH_ID, **overrides)


def three() -> list[Request]:
    return [
        member(1, "bash", {"command": f"git push && echo {AWS_KEY}"}),
        member(2, "deploy", {"env": "<!channel> *prod*", "note": "```\nclose the block"}),
        member(
            3,
            "edit_file",
            {"file_path": "a.py", "old_string": "x = 1\n", "new_string": "x = 2\n"},
            status="denied",
            resolved_by="bob <@U0BOB>",
            resolved_at=T0 + timedelta(minutes=1),
            resolution_reason="not <!here>",
        ),
    ]


def assert_valid_line_batch(messages: list[dict[str, Any]]) -> None:
    assert 1 <= len(messages) <= PUSH_MESSAGES_MAX
    for message in messages:
        assert_valid_line_message(message)


def assert_valid_line_message(message: dict[str, Any]) -> None:
    assert FlexMessage.from_dict(message).to_dict() == message
    assert 0 < utf16_len(message["altText"]) <= 400
    size = len(json.dumps(message).encode())  # line-bot-sdk sends ensure_ascii JSON
    assert size <= MESSAGE_BYTES
    contents = message["contents"]
    bubbles = contents["contents"] if contents["type"] == "carousel" else [contents]
    assert len(bubbles) <= 12
    assert all(len(json.dumps(b).encode()) <= BUBBLE_BYTES for b in bubbles)
    for node in walk(message):
        if node.get("type") == "text":
            assert node["text"]
    for action in postback_actions(message):
        assert len(action["data"]) <= 300 and len(action["label"]) <= 20
        assert parse_postback_data(action["data"]) or parse_batch_postback_data(action["data"])


def test_slack_batch_card_snapshot() -> None:
    card = render_slack_batch(present_batch(three(), now=T0))
    assert_valid_slack(card)
    assert_snapshot("batch.slack", card)
    text = json.dumps(card)
    assert AWS_KEY not in text  # masked as on a single card
    assert "<!channel>" not in text and "<@U0BOB>" not in text and "<!here>" not in text
    assert "&lt;!channel&gt;" in text
    values = [n["value"] for n in walk(card["blocks"]) if n.get("type") == "button"]
    assert values.count(BATCH_ID) == 3  # Approve all, Deny all, Allow all for session
    assert values.count(three()[2].id) == 0  # a decided call shows its outcome, no buttons
    assert "Denied by bob" in text


def test_line_batch_card_snapshot() -> None:
    [card] = render_line_batch(present_batch(three(), now=T0))
    assert_valid_line_batch([card])
    assert_snapshot("batch.line", card)
    data = [a["data"] for a in postback_actions(card)]
    assert f"v=1&a=approve_all&b={BATCH_ID}" in data
    assert f"v=1&a=deny&r={three()[0].id}" in data
    assert AWS_KEY not in json.dumps(card)


def test_console_batch_card_snapshot() -> None:
    text = render_console_batch(present_batch(three(), now=T0), approver="alice")
    assert text.count("tapgate resolve") == 6  # approve, deny, session for each open call
    assert AWS_KEY not in text
    assert "Denied by bob" in text


def test_a_fully_decided_batch_has_no_batch_buttons() -> None:
    done = [replace(r, status="approved", resolved_by="alice", resolved_at=T0) for r in three()]
    card = render_slack_batch(present_batch(done, now=T0))
    assert "tapgate_approve_all" not in json.dumps(card)
    assert card["blocks"][0]["text"]["text"].startswith("Decided: 3 calls")


@pytest.mark.parametrize(("count", "messages"), [(1, 1), (5, 1), (6, 1), (23, 1), (MAX_CALLS, 2)])
def test_the_largest_batches_fit_both_platforms(count: int, messages: int) -> None:
    """50 calls of 5,000 non-ASCII characters each: within every limit, every call shown.

    LINE: one message up to dozens of calls; only the worst case (50 calls,
    every character a six-byte escape) takes a second carousel in the same push.
    """
    worst = "デプロイ" * 1250 + "\n" * 40
    calls = [member(n, "deploy", {"env": worst, "n": n}) for n in range(count)]
    batch = present_batch(calls, now=T0)
    slack = render_slack_batch(batch)
    assert_valid_slack(slack)
    shown = json.dumps(slack)
    assert all(c.id in shown for c in calls[:FULL_CALLS])  # their own buttons
    assert all(f"*{n + 1}.*" in shown for n in range(count))  # every call listed
    line = render_line_batch(batch)
    assert_valid_line_batch(line)
    assert len(line) == messages
    assert all(f"r={c.id}" in json.dumps(line) for c in calls)


def test_truncation_is_visible_on_a_batch_card() -> None:
    long = "\n".join(f"line {n}" for n in range(200))
    batch = present_batch([member(1, "bash", {"command": long})], now=T0)
    assert "more lines" in json.dumps(render_slack_batch(batch))
    assert "more lines" in json.dumps(render_line_batch(batch))


def test_ascii_batches_of_fifty_fit_one_line_message() -> None:
    calls = [member(n, "bash", {"command": f"make deploy-{n} " + "x" * 400}) for n in range(50)]
    assert len(render_line_batch(present_batch(calls, now=T0))) == 1


@pytest.mark.parametrize("decided", [False, True])
def test_a_full_batch_of_escaped_text_stays_within_fifty_blocks(decided: bool) -> None:
    """Slack refuses a message of more than 50 blocks whole (``invalid_blocks``; Block
    Kit reference: "up to 50 blocks in each message"), so the approver sees nothing.

    ``&`` escapes to ``&amp;``: 30 further calls of 300 ``&`` each were one line
    of ~1,500 characters, one 3,000-character section each: 73 blocks.
    """
    status: dict[str, Any] = (
        {"status": "approved", "resolved_by": "alice", "resolved_at": T0} if decided else {}
    )
    calls = [member(n, "bash", {"command": "true " + "&" * 400}, **status) for n in range(50)]
    card = render_slack_batch(present_batch(calls, now=T0), inbox=not decided)
    assert_valid_slack(card)
    shown = json.dumps(card)
    assert all(f"*{n + 1}.*" in shown for n in range(50))


@pytest.mark.parametrize(
    ("count", "argument", "decided"),
    [
        (5, "x" * 5000, False),
        (20, "y " * 2500, False),
        (MAX_CALLS, "z" * 5000, False),
        (MAX_CALLS, "&" * 3000, False),
        (MAX_CALLS, "w" * 5000, True),
    ],
    ids=["five-long", "twenty-long", "fifty-long", "fifty-escaped", "fifty-decided"],
)
def test_a_batch_of_long_calls_stays_within_slacks_text_cap(
    count: int, argument: str, decided: bool
) -> None:
    """Slack refuses a message whose blocks hold more than ~12,000 characters of text
    (``msg_blocks_too_long``; undocumented, reported from 11,341 characters in
    slackapi/bolt-js#2867): five calls of long arguments made a card of 16,000,
    twenty one of 28,000, and the approvers saw nothing. Every call stays listed."""
    status: dict[str, Any] = (
        {
            "status": "denied",
            "resolved_by": "alice",
            "resolved_at": T0,
            "resolution_reason": "r" * 2000,
        }
        if decided
        else {}
    )
    calls = [member(n, "deploy", {"command": argument}, **status) for n in range(count)]
    card = render_slack_batch(present_batch(calls, now=T0), inbox=not decided)
    assert_valid_slack(card)  # includes the text cap
    assert block_text_length(card["blocks"]) <= MESSAGE_TEXT_MAX
    shown = json.dumps(card)
    assert all(f"*{n + 1}.*" in shown for n in range(count))
    assert all(c.id in shown for c in calls[:FULL_CALLS])


def test_further_calls_show_their_other_arguments() -> None:
    """A call past the first 20 is decided by "Approve all", whose dialog says "each
    with all its arguments": its other arguments (a ``cwd``) must be on its line too."""
    calls = [member(n, "bash", {"command": "ls", "cwd": f"/srv/prod-{n}"}) for n in range(25)]
    card = render_slack_batch(present_batch(calls, now=T0))
    shown = json.dumps(card)
    assert all(f"/srv/prod-{n}" in shown for n in range(25))


@pytest.mark.parametrize(
    ("count", "arguments"),
    [(50, {"x": 1}), (20, {"file_path": "&" * 200, "content": "x"})],
    ids=["fifty-calls", "with-a-path"],
)
def test_escape_heavy_names_leave_room_for_the_arguments(
    count: int, arguments: dict[str, Any]
) -> None:
    """A tool name (up to 200 characters from the API) or path of ``&`` escapes to
    five times its length: a call's title then outgrew its share of the card
    (600 characters for 50 calls) and rendering raised instead of cutting."""
    calls = [member(n, "&" * 120, arguments) for n in range(count)]
    card = render_slack_batch(present_batch(calls, now=T0))
    assert_valid_slack(card)
    assert all(f"*{n + 1}.*" in json.dumps(card) for n in range(count))
