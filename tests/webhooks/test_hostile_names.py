"""A tool's name is agent text: every reply and dialog shows it as the card does.

The card masks the name and makes invisible characters visible
(``presentation.present`` through ``clean_name``); the Slack dialogs opened
from the card and the one-line replies to a tap used the raw name, so a
credential the card hid, or a zero-width character it showed, came back raw.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from tapgate.core.tap_texts import (
    already_message,
    applied_message,
    ask_reason_message,
    counted_message,
    partial_message,
)
from tapgate.webhooks._slack_modals import deny_modal, edit_modal
from tests.notifiers.test_render import GITHUB_TOKEN, T0, make_request, rendered, view_of

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
