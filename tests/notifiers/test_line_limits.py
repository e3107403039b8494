"""LINE messages against hostile text: what the approver sees, and what LINE accepts.

Limits confirmed in LINE's "Character counting in a text" page
(developers.line.biz/en/docs/messaging-api/text-character-count): the
Messaging API counts text in UTF-16 code units (an emoji such as 🍎 is two),
except action labels, ``displayText``, ``fillInText`` and template texts,
which count grapheme clusters. The text message's 5000 and postback
``data`` / ``displayText`` / ``fillInText`` 300 are from the Messaging API
reference as line-bot-sdk's ``TextMessage`` / ``PostbackAction`` docs quote it.
"""

from __future__ import annotations

import json

from tapgate.notifiers.line_flex import render_line
from tests.notifiers.test_render import assert_valid_line, view_of

# "rm -rf ~" in Unicode tag characters (U+E0000-U+E007F): category Cf, drawn
# as nothing by LINE and most fonts, read as ASCII by a language model
# ("ASCII smuggling"). A card that passes them through shows an argument
# that looks empty or harmless while the tool gets, and an agent reads, more.
HIDDEN = "".join(chr(0xE0000 + ord(c)) for c in "rm -rf ~")


def test_tag_characters_are_shown_on_a_line_card() -> None:
    """Hidden tag characters in an argument become visible markers, like bidi overrides."""
    view = view_of("send_message", {"text": f"hello{HIDDEN}"}, agent=f"bot{HIDDEN[:2]}")
    card = render_line(view)
    assert_valid_line(card)
    shown = json.dumps(card, ensure_ascii=False)
    assert HIDDEN[0] not in shown
    assert "⟨U+E0072⟩⟨U+E006D⟩" in shown  # "rm", as markers the approver can read
    assert view.agent == "bot⟨U+E0072⟩⟨U+E006D⟩"
