"""Slack's text rules: one escaping function for every Slack text tapgate sends.

Messages (the notifiers) and ephemerals and modals (the webhooks) both put
untrusted agent text in front of approvers, and the two layers may not import
each other, so the rule lives here, in the domain: pure text, no SDK.

- everywhere: ``&``, ``<`` and ``>`` become entities, so ``<!channel>``,
  ``<@U123>`` and ``<https://evil|click>`` arrive as text;
- ``mrkdwn`` outside code (a message's fallback ``text``, an ephemeral, the
  facts between bold labels): the markers ``*``, ``_``, ``~`` and the backtick
  become lookalikes (∗ ˍ ∼ ˋ). Slack has no escape for them: a backslash is
  shown as is, an entity (``&#42;``) is not decoded, and a zero-width space
  *enables* formatting (it counts as a word break). A lookalike cannot open or
  close anything, in the message or in a push notification;
- inside code and ``plain_text`` Slack formats nothing, so only the three
  entities apply and the text is shown byte for byte.
"""

from __future__ import annotations

from typing import Literal

__all__ = ["LOOKALIKE_BACKTICK", "TextPlace", "escape"]

LOOKALIKE_BACKTICK = "\u02cb"  # MODIFIER LETTER GRAVE ACCENT: looks like ` but ends nothing
# Same-looking characters Slack's mrkdwn does not read as markers (jsx-slack's choice too).
_MRKDWN_MARKERS = str.maketrans(
    {
        "*": "\u2217",  # ASTERISK OPERATOR
        "_": "\u02cd",  # MODIFIER LETTER LOW MACRON
        "~": "\u223c",  # TILDE OPERATOR
        "`": LOOKALIKE_BACKTICK,
    }
)

TextPlace = Literal["mrkdwn", "code", "plain_text"]
"""Where escaped text lands: formatted ``mrkdwn``, inside code, or ``plain_text``."""


def escape(text: str, *, place: TextPlace = "mrkdwn") -> str:
    """``text`` made inert for ``place``: the one escaping function of every Slack text.

    ``&`` goes first, or it would escape the others. ``mrkdwn`` is the default
    because it is the place that needs the most.
    """
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return text.translate(_MRKDWN_MARKERS) if place == "mrkdwn" else text
