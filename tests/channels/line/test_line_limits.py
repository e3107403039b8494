"""LINE messages against hostile text: what the approver sees, and what LINE accepts.

Limits confirmed in LINE's "Character counting in a text" page
(developers.line.biz/en/docs/messaging-api/text-character-count): the
Messaging API counts text in UTF-16 code units (an emoji such as 🍎 is two),
except action labels, ``displayText``, ``fillInText`` and template texts,
which count grapheme clusters. The text message's 5000 and postback
``data`` / ``displayText`` / ``fillInText`` 300 are from the Messaging API
reference as line-bot-sdk's ``TextMessage`` / ``PostbackAction`` docs quote it;
a carousel's 12 bubbles from line-bot-sdk's ``FlexCarousel``. Not confirmed
from LINE's own pages when these tests were written (the renderers keep the
older, stricter figures): ``altText`` 1500 (400 used), the bubble's 30 KB and
the carousel's 50 KB, five messages a reply or push, 13 quick-reply items.
"""

from __future__ import annotations

import json

from tapgate.channels.line.batch_flex import render_line_batch
from tapgate.channels.line.flex import render_line
from tapgate.delivery.batch_view import present_batch
from tapgate.gate.batching import MAX_CALLS
from tests.delivery.test_batch_render import assert_valid_line_batch, member
from tests.delivery.test_render import T0, assert_valid_line, view_of, walk

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


def test_a_full_batch_of_emoji_arguments_still_renders() -> None:
    """50 calls whose arguments are emoji (two UTF-16 units each) make one LINE push.

    Such a card steps down ``ARGS_LADDER`` to its last rungs (100 and 80
    units), where a cut that names what it cut ("… 250 more characters")
    leaves room for fewer than the 40 characters ``truncate_lines`` insists
    on: rendering raised ``ValueError``, the notifier turned it into a
    permanent delivery failure, and the approver never saw the batch.
    """
    calls = [member(n, "Bash", {"command": "echo " + "🚀" * 300}) for n in range(1, MAX_CALLS + 1)]
    messages = render_line_batch(present_batch(calls, tool_shell_args={"Bash": "command"}, now=T0))
    assert_valid_line_batch(messages)
    shown = [
        node["text"]
        for message in messages
        for node in walk(message)
        if node.get("type") == "text" and node["text"].startswith("echo 🚀")
    ]
    assert len(shown) == MAX_CALLS  # every call still shows the start of its command
