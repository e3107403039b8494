"""The wire format of approval buttons, shared by the renderers and the webhooks.

A button carries what it asks for and the request id; the message that
renders it (``tapgate.notifiers``) and the webhook that receives the tap
(``tapgate.webhooks``) must agree on that format without importing each
other, so it lives here.

- LINE postback ``data``: ``v=1&a=<action>&r=<request id>`` (versioned, so a
  button tapped months later after a format change is recognised as old
  instead of misread; at most 95 characters against LINE's 300).
- Slack ``action_id``: one per action, the button ``value`` being the id.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Literal

__all__ = [
    "SLACK_ACTIONS",
    "SLACK_ACTION_IDS",
    "TapAction",
    "parse_postback_data",
    "postback_data",
    "valid_request_id",
]

TapAction = Literal["approve", "deny", "approve_session"]
"""What a button asks for."""

POSTBACK_VERSION = "1"
POSTBACK_DATA_MAX = 300
_ACTIONS: Mapping[str, TapAction] = {
    "approve": "approve",
    "deny": "deny",
    "approve_session": "approve_session",
}
_REQUEST_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")

SLACK_ACTION_IDS: Mapping[TapAction, str] = {
    "approve": "tapgate_approve",
    "deny": "tapgate_deny",
    "approve_session": "tapgate_approve_session",
}
SLACK_ACTIONS: Mapping[str, TapAction] = {v: k for k, v in SLACK_ACTION_IDS.items()}


def valid_request_id(value: object) -> bool:
    """1-64 URL-safe characters: the shape of every id tapgate issues."""
    return isinstance(value, str) and _REQUEST_ID.fullmatch(value) is not None


def postback_data(action: TapAction, request_id: str) -> str:
    """The ``data`` of a LINE postback button: ``v=1&a=approve&r=<request id>``.

    Raises ``ValueError`` for an unknown action or a malformed id.
    """
    if action not in _ACTIONS or not valid_request_id(request_id):
        raise ValueError(f"cannot build postback data for {action!r}, {request_id!r}")
    return f"v={POSTBACK_VERSION}&a={action}&r={request_id}"


def parse_postback_data(data: object) -> tuple[TapAction, str] | None:
    """``(action, request_id)`` from a postback's ``data``, or ``None``.

    The data arrives from the network, so anything but an exact current-version
    triple is refused rather than guessed at. Never raises.
    """
    if not isinstance(data, str) or len(data) > POSTBACK_DATA_MAX:
        return None
    fields: dict[str, str] = {}
    for part in data.split("&"):
        key, sep, value = part.partition("=")
        if not sep or key in fields:
            return None
        fields[key] = value
    if fields.keys() != {"v", "a", "r"} or fields["v"] != POSTBACK_VERSION:
        return None
    action, request_id = _ACTIONS.get(fields["a"]), fields["r"]
    if action is None or not valid_request_id(request_id):
        return None
    return action, request_id
