"""The LINE reply's one text message against LINE's 5000, counted as LINE counts it.

LINE counts a text message's ``text`` in UTF-16 code units: an emoji outside
the Basic Multilingual Plane (🍎) is two ("Character counting in a text",
developers.line.biz/en/docs/messaging-api/text-character-count). A reply cut
to 5000 *code points* can be 10,000 units, which LINE refuses whole: the
approver would then see no answer to their tap at all. The fake LINE API
(``tests.fakes``) counts as LINE does.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tapgate.channels.line.reply import TEXT_LIMIT, LineReplier
from tests.fakes import FakeLine

TOKEN = "reply-test-token"


@pytest.fixture
async def replier() -> AsyncIterator[tuple[FakeLine, LineReplier]]:
    async with FakeLine(access_token=TOKEN) as line:
        sender = LineReplier(api_base_url=line.url, access_token=TOKEN, timeout=5.0)
        try:
            yield line, sender
        finally:
            await sender.close()


def units(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


@pytest.mark.parametrize(
    "text",
    [
        "🍎" * 4000,  # 8000 units in 4000 code points: under a code-point cut
        "a" + "🍎" * 2600,  # the cut falls between the two halves of an emoji
        "x" * 6000,
    ],
    ids=["emoji", "odd-cut", "ascii"],
)
async def test_a_long_reply_is_cut_to_5000_utf16_units(
    replier: tuple[FakeLine, LineReplier], text: str
) -> None:
    line, sender = replier
    await sender.reply("rt-long", text)
    [reply] = line.replies
    [message] = reply.messages
    sent = message["text"]
    assert units(sent) <= TEXT_LIMIT
    assert units(sent) >= TEXT_LIMIT - 1  # only a whole emoji that would not fit is dropped
    assert text.startswith(sent)  # never half a surrogate pair: a prefix of what was said


async def test_a_short_reply_is_sent_as_it_is(replier: tuple[FakeLine, LineReplier]) -> None:
    line, sender = replier
    await sender.reply("rt-short", "Approved - deploy 🍎 (request 3fA9xK2b)")
    assert line.replies[0].messages == [
        {"type": "text", "text": "Approved - deploy 🍎 (request 3fA9xK2b)"}
    ]
