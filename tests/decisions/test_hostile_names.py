"""Agent text outside the card (a tool's name, what a grant covers) shown as the card shows it.

The card masks the name and makes invisible characters visible
(``presentation.present`` through ``clean_name``); the Slack dialogs opened
from the card and the one-line replies to a tap used the raw name, so a
credential the card hid, or a zero-width character it showed, came back raw.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from tapgate.channels.line.grants import listing_flex
from tapgate.channels.slack.grants import listing_answer
from tapgate.channels.slack.modals import deny_modal, edit_modal
from tapgate.decisions.chat_grants import Listed, Listing
from tapgate.decisions.chat_grants import _covers as own_grants_covers
from tapgate.decisions.remember import covers
from tapgate.decisions.texts import (
    already_message,
    applied_message,
    ask_reason_message,
    counted_message,
    grant_line,
    partial_message,
)
from tapgate.gate.models import Grant
from tests.delivery.test_render import GITHUB_TOKEN, T0, make_request, rendered, view_of

TOOL = f"deploy {GITHUB_TOKEN}\u200b"
SECRET = GITHUB_TOKEN[6:]


def test_the_card_itself_hides_the_token_and_shows_the_invisible_character() -> None:
    out = json.dumps(json.loads(rendered(view_of(TOOL, {"env": "prod"}))), ensure_ascii=False)
    assert SECRET not in out
    assert "⟨U+200B⟩" in out


@pytest.mark.parametrize("modal", [deny_modal, edit_modal])
def test_slack_dialogs_show_the_tool_as_the_card_does(modal: object) -> None:
    assert callable(modal)
    shown = json.dumps(modal(make_request(TOOL, {"env": "prod"}), "C1"), ensure_ascii=False)
    assert SECRET not in shown
    assert "\u200b" not in shown and "⟨U+200B⟩" in shown


def test_tap_replies_show_the_tool_as_the_card_does() -> None:
    request = make_request(TOOL, {"env": "prod"}, quorum=2, approvals=("alice",))
    decided = replace(request, status="approved", resolved_by="alice", resolved_at=T0)
    replies = [
        applied_message(decided),
        already_message(decided, "approved"),
        partial_message(request),
        counted_message(request),
        ask_reason_message(request, 300),
    ]
    for reply in replies:
        assert SECRET not in reply
        assert "\u200b" not in reply and "⟨U+200B⟩" in reply


def test_grant_listings_show_a_bidi_override_in_a_keyed_value() -> None:
    """What a grant covers is listed (``/tapgate grants``, LINE ``grants``, the web
    inbox) for the approver to decide whether to revoke it; a right-to-left
    override in the keyed value was listed raw, so the line could read reversed."""
    fingerprint = json.dumps({"env": "prod\u202egnigats"})
    grant = Grant(
        id="g1",
        scope="session",
        agent="ci",
        session="s\u200b1",
        tool="deploy",
        fingerprint=fingerprint,
        created_at=T0,
        created_by="alice",
    )
    listing = Listing(
        approver="alice",
        message="Your grants",
        items=(Listed(grant=grant, line=grant_line(grant, own_grants_covers(grant))),),
        total=1,
    )
    shown = json.dumps(
        [listing_answer(listing).blocks, listing_flex(listing), covers("deploy", fingerprint)],
        ensure_ascii=False,
    )
    assert "\u202e" not in shown and "\u200b" not in shown
    assert "prod⟨U+202E⟩gnigats" in shown and "s⟨U+200B⟩1" in shown


def test_the_revoke_dialog_never_cuts_an_entity_in_half() -> None:
    """Slack's confirm dialog text is at most 300 characters (Block Kit confirmation
    dialog object); cutting the escaped line there left ``&am…``, shown as typed."""
    grant = Grant(
        id="g2",
        scope="always",
        agent="ci",
        session=None,
        tool="deploy",
        fingerprint=json.dumps({"env": "&" * 150}),
        created_at=T0,
        created_by="alice",
    )
    line = grant_line(grant, own_grants_covers(grant))
    listing = Listing(
        approver="alice", message="Your grants", items=(Listed(grant=grant, line=line),), total=1
    )
    blocks = listing_answer(listing).blocks
    assert blocks is not None
    block = blocks[1]
    text = block["accessory"]["confirm"]["text"]["text"]
    assert len(text) <= 300 and text.endswith("&amp;…")
