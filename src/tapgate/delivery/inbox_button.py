"""The "Open inbox" button every live card carries when the web inbox has a public URL.

It names no request: whoever taps it is sent a single-use sign-in link for
themselves (``webhooks/_slack_sign_in.py``, ``webhooks/_line_taps.py``, the meaning
in :mod:`tapgate.decisions.chat_commands`). Added after a card's own buttons, by
the Slack and LINE renderers, single and batch cards alike.
"""

from __future__ import annotations

from typing import Any

from tapgate.decisions.buttons import INBOX_ACTION_ID, INBOX_POSTBACK

__all__ = ["line_inbox_button", "slack_inbox_button"]


def slack_inbox_button(payload: dict[str, Any], inbox: bool) -> dict[str, Any]:
    """``payload`` with "Open inbox" after the buttons of its last actions block, if ``inbox``.

    The button carries no request: tapping it asks for a sign-in link for the
    tapper (``webhooks/_slack_sign_in.py``), answered ephemerally.
    """
    if not inbox:
        return payload
    button = {
        "type": "button",
        "action_id": INBOX_ACTION_ID,
        "text": {"type": "plain_text", "text": "Open inbox"},
        "value": "inbox",
    }
    blocks = list(payload["blocks"])
    last = max(i for i, block in enumerate(blocks) if block["type"] == "actions")
    blocks[last] = {**blocks[last], "elements": [*blocks[last]["elements"], button]}
    return {**payload, "blocks": blocks}


def line_inbox_button(message: dict[str, Any], inbox: bool) -> dict[str, Any]:
    """``message`` with "Open inbox" last in its bubble's footer, if ``inbox``.

    A postback naming no request (:data:`~tapgate.decisions.buttons.INBOX_POSTBACK`):
    the webhook replies with a sign-in link for the tapper.
    """
    if not inbox:
        return message
    button = {
        "type": "button",
        "style": "link",
        "height": "sm",
        "action": {
            "type": "postback",
            "label": "Open inbox",
            "data": INBOX_POSTBACK,
            "displayText": "Open inbox",
        },
    }
    bubble = message["contents"]
    footer = bubble["footer"]
    contents = {**bubble, "footer": {**footer, "contents": [*footer["contents"], button]}}
    return {**message, "contents": contents}
