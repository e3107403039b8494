"""Agent text made inert in Discord messages: markdown escaped, code blocks that cannot close.

Everything from a request is untrusted: an argument may hold ``@everyone``,
``<@123>``, ``[click](https://evil)`` or a run of backticks meant to close
the code block it is shown in and format the rest of the card. Two places
text lands, two rules:

- outside code (titles, field values, outcome lines): every markdown
  character is backslash-escaped, and ``@`` is followed by a zero-width
  space, so mentions, masked links, headings, lists, quotes and spoilers
  arrive as the characters typed. (``allowed_mentions: {"parse": []}`` on
  every message is the second lock: nothing pings even if text slipped by.)
- inside a code block: Discord formats nothing there except the closing
  fence, so a run of backticks gets a zero-width space between each pair and
  can never make three; the approver reads every other byte as sent.

Discord counts its limits in characters (code points) of the text as sent,
so a cut is made on the raw text and measured after escaping.
"""

from __future__ import annotations

import re

from tapgate.delivery.presentation import clip

__all__ = ["code_block", "escape", "escaped_clip"]

_MARKDOWN = re.compile(r"([\\*_~`|>#\-\[\]()<:.!+=])")
_MENTION = "@"
_ZWSP = "\u200b"
_BACKTICK_RUN = re.compile(r"`(?=`)")


def escape(text: str) -> str:
    """``text`` with every markdown character escaped and mentions broken."""
    return _MARKDOWN.sub(r"\\\1", text).replace(_MENTION, _MENTION + _ZWSP)


def escaped_clip(text: str, max_len: int) -> str:
    """``text`` on one line, cut raw so that its escaped form is at most ``max_len``."""
    return escape(clip(text, max_len, measure=lambda t: len(escape(t))))


def code_block(text: str) -> str:
    """``text`` in a fenced code block that nothing inside can close."""
    body = _BACKTICK_RUN.sub("`" + _ZWSP, text.removesuffix("\n"))
    if body.endswith("`"):
        body += _ZWSP  # a final backtick would join the closing fence
    return f"```\n{body or ' '}\n```"
