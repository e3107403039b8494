"""The "Open inbox" button: on every live card when asked for, on none otherwise.

The cards stay valid for the platforms' SDKs with the button, it comes after
the card's own buttons, and it names no request (the tapper gets their own link).
"""

from __future__ import annotations

from typing import Any

from tapgate.channels.line.batch_flex import render_line_batch
from tapgate.channels.line.flex import render_line
from tapgate.channels.slack.batch_blocks import render_slack_batch
from tapgate.channels.slack.blocks import render_slack
from tapgate.decisions.buttons import INBOX_ACTION_ID, INBOX_POSTBACK, parse_postback_data
from tapgate.delivery.batch_view import present_batch
from tapgate.delivery.presentation import present
from tapgate.gate.models import CONTACT_TOOL
from tests.delivery.test_batch_render import three
from tests.delivery.test_render import (
    assert_valid_line,
    assert_valid_slack,
    make_request,
    postback_actions,
    walk,
)


def _slack_ids(message: dict[str, Any]) -> list[str]:
    return [n["action_id"] for n in walk(message) if n.get("type") == "button"]


def test_slack_cards_carry_it_last_when_asked() -> None:
    for request in (
        make_request("deploy", {"env": "prod"}),
        make_request(CONTACT_TOOL, {"message": "Ship it?"}),
    ):
        view = present(request)
        assert INBOX_ACTION_ID not in _slack_ids(render_slack(view))
        with_button = render_slack(view, inbox=True)
        assert_valid_slack(with_button)
        assert _slack_ids(with_button)[-1] == INBOX_ACTION_ID
    batch = present_batch(three())
    assert INBOX_ACTION_ID not in _slack_ids(render_slack_batch(batch))
    card = render_slack_batch(batch, inbox=True)
    assert_valid_slack(card)
    assert _slack_ids(card)[-1] == INBOX_ACTION_ID


def test_line_cards_carry_it_last_when_asked() -> None:
    view = present(make_request("deploy", {"env": "prod"}))
    plain = [a["data"] for a in postback_actions(render_line(view))]
    assert INBOX_POSTBACK not in plain
    message = render_line(view, inbox=True)
    assert_valid_line(message)
    data = [a["data"] for a in postback_actions(message)]
    assert data[:-1] == plain and data[-1] == INBOX_POSTBACK
    assert parse_postback_data(INBOX_POSTBACK) is None  # never read as a tap on a request
    batch = render_line_batch(present_batch(three()), inbox=True)
    for message in batch:
        assert_valid_line(message)
    assert INBOX_POSTBACK in [a["data"] for m in batch for a in postback_actions(m)]
    plain_batch = render_line_batch(present_batch(three()))
    assert INBOX_POSTBACK not in [a["data"] for m in plain_batch for a in postback_actions(m)]
