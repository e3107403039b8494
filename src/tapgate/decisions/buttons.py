"""The wire format of approval buttons, shared by the renderers and the webhooks.

A button carries what it asks for and the request id; the message that
renders it (``tapgate.notifiers``) and the webhook that receives the tap
(``tapgate.webhooks``) must agree on that format without importing each
other, so it lives here.

- LINE postback ``data``: ``v=1&a=<action>&r=<request id>`` (versioned, so a
  button tapped months later after a format change is recognised as old
  instead of misread; at most 95 characters against LINE's 300). ``reply``
  and ``dismiss`` joined ``v=1`` later: the older actions parse exactly as
  before, so the version did not change.
- Slack ``action_id``: one per action, the button ``value`` being the id.
- A batch's card adds three actions on the whole batch (:data:`BatchAction`):
  LINE ``v=1&a=approve_all&b=<batch id>`` (``b``, not ``r``: a batch id can
  never be read as a request id, so an old parser refuses it; at most 101
  characters), Slack ``tapgate_approve_all`` etc. with the batch id as the
  ``value``. Its per-call buttons are the single request's own.
- "Always allow" (``approve_always``) joined ``v=1`` like ``reply``: an older
  parser refuses it as unknown rather than misreading it.
- Slack's "Edit…" (:data:`SLACK_EDIT_ACTION_ID`) opens the edit dialog; it
  is no :data:`TapAction`, so no surface can read it as an answer.
- A grant's Revoke button (:func:`revoke_postback_data`): LINE
  ``v=1&a=revoke&g=<grant id>`` (``g``: never readable as a request or a
  batch), Slack :data:`SLACK_REVOKE_ACTION_ID` with the grant id as ``value``.
- LINE's "Deny…" (:func:`deny_reason_postback_data`): ``v=1&a=deny_reason&r=<id>``.
  It decides nothing itself: it asks for the reason, which the approver's next
  text message gives (:mod:`tapgate.decisions.typed_reasons`). Not a :data:`TapAction`, so
  no surface can mistake it for a decision; an older parser refuses it as
  unknown, and an old card's ``a=deny`` still denies at once.
- A typed answer to a question (LINE has no dialogs): a text message
  ``answer <reference>: <the answer>``. The Reply button pre-fills
  ``answer <short id>: `` in the approver's keyboard; the reference is a
  request id or a prefix of one (:data:`REFERENCE_MIN` characters or more),
  which ``core.taps.find_question`` resolves among the sender's questions.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Literal, TypeVar

__all__ = [
    "BATCH_ACTIONS",
    "INBOX_ACTION_ID",
    "INBOX_POSTBACK",
    "QUESTION_ACTIONS",
    "REFERENCE_MIN",
    "SHORT_ID_LENGTH",
    "SLACK_ACTIONS",
    "SLACK_ACTION_IDS",
    "SLACK_BATCH_ACTIONS",
    "SLACK_BATCH_ACTION_IDS",
    "SLACK_EDIT_ACTION_ID",
    "SLACK_REVOKE_ACTION_ID",
    "BatchAction",
    "TapAction",
    "answer_prefill",
    "batch_postback_data",
    "deny_reason_postback_data",
    "parse_answer",
    "parse_batch_postback_data",
    "parse_deny_reason_postback_data",
    "parse_postback_data",
    "parse_revoke_postback_data",
    "postback_data",
    "revoke_postback_data",
    "valid_request_id",
]

TapAction = Literal["approve", "deny", "approve_session", "approve_always", "reply", "dismiss"]
"""What a button asks for; ``reply`` and ``dismiss`` act on questions (``CONTACT_TOOL``) only.

``reply`` approves with the approver's answer as the reason; ``dismiss``
denies (nobody will answer).
"""

BatchAction = Literal["approve_all", "deny_all", "approve_all_session"]
"""What a batch card's own buttons ask for: every still-pending call of the batch at once."""

BATCH_ACTIONS: frozenset[BatchAction] = frozenset(
    {"approve_all", "deny_all", "approve_all_session"}
)

QUESTION_ACTIONS: frozenset[TapAction] = frozenset({"reply", "dismiss"})
"""The actions that make sense for a question only, never for a tool call."""

SHORT_ID_LENGTH = 8
"""How much of an id messages show, and what the Reply button pre-fills."""
REFERENCE_MIN = 6
"""The shortest id prefix a typed answer may use: ~36 random bits, one person's questions."""

_A = TypeVar("_A")
POSTBACK_VERSION = "1"
POSTBACK_DATA_MAX = 300
_ACTIONS: Mapping[str, TapAction] = {
    "approve": "approve",
    "deny": "deny",
    "approve_session": "approve_session",
    "approve_always": "approve_always",
    "reply": "reply",
    "dismiss": "dismiss",
}
_REQUEST_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
# ``answer <reference>: <text>``. The keyword in any case (phones capitalise a
# message's first letter); a full-width colon too (Japanese input methods type
# one); ``\s`` covers the ideographic space. The answer may span lines.
_ANSWER = re.compile(
    rf"\s*(?i:answer)\s+(?P<ref>[A-Za-z0-9_-]{{{REFERENCE_MIN},64}})\s*[:\uff1a](?P<answer>.*)",
    re.DOTALL,
)

SLACK_ACTION_IDS: Mapping[TapAction, str] = {
    "approve": "tapgate_approve",
    "deny": "tapgate_deny",
    "approve_session": "tapgate_approve_session",
    "approve_always": "tapgate_approve_always",
    "reply": "tapgate_reply",
    "dismiss": "tapgate_dismiss",
}
SLACK_ACTIONS: Mapping[str, TapAction] = {v: k for k, v in SLACK_ACTION_IDS.items()}
SLACK_BATCH_ACTION_IDS: Mapping[BatchAction, str] = {
    "approve_all": "tapgate_approve_all",
    "deny_all": "tapgate_deny_all",
    "approve_all_session": "tapgate_approve_all_session",
}
SLACK_BATCH_ACTIONS: Mapping[str, BatchAction] = {v: k for k, v in SLACK_BATCH_ACTION_IDS.items()}
SLACK_EDIT_ACTION_ID = "tapgate_edit"
"""``action_id`` of a single request's "Edit…" button (``value``: the request id).

Not a :data:`TapAction`: it opens a dialog and decides nothing; the dialog's
submission approves (``core.edits``). No LINE postback exists for it.
"""
INBOX_ACTION_ID = "tapgate_open_inbox"
"""``action_id`` of a card's "Open inbox" button: a sign-in link for whoever taps it."""
INBOX_POSTBACK = "v=1&a=inbox"
"""LINE ``data`` of the same button (it names no request: the link is the tapper's)."""
SLACK_REVOKE_ACTION_ID = "tapgate_revoke_grant"
"""``action_id`` of a listed grant's Revoke button; its ``value`` is the grant id."""
_REVOKE: Mapping[str, Literal["revoke"]] = {"revoke": "revoke"}


def valid_request_id(value: object) -> bool:
    """1-64 URL-safe characters: the shape of every id tapgate issues."""
    return isinstance(value, str) and _REQUEST_ID.fullmatch(value) is not None


def postback_data(action: TapAction, request_id: str) -> str:
    """The ``data`` of a LINE postback button: ``v=1&a=approve&r=<request id>``.

    Raises ``ValueError`` for an unknown action or a malformed id.
    """
    return _data(action, "r", request_id, _ACTIONS)


def parse_postback_data(data: object) -> tuple[TapAction, str] | None:
    """``(action, request_id)`` from a postback's ``data``, or ``None``.

    The data arrives from the network, so anything but an exact current-version
    triple is refused rather than guessed at. Never raises.
    """
    return _parse(data, "r", _ACTIONS)


def batch_postback_data(action: BatchAction, batch_id: str) -> str:
    """The ``data`` of a batch card's postback button: ``v=1&a=approve_all&b=<batch id>``.

    Raises ``ValueError`` for an unknown action or a malformed id.
    """
    return _data(action, "b", batch_id, BATCH_ACTIONS)


def _data(action: str, key: str, ident: str, allowed: Collection[str]) -> str:
    if action not in allowed or not valid_request_id(ident):
        raise ValueError(f"cannot build postback data for {action!r}, {ident!r}")
    return f"v={POSTBACK_VERSION}&a={action}&{key}={ident}"


def parse_batch_postback_data(data: object) -> tuple[BatchAction, str] | None:
    """``(action, batch_id)`` from a batch postback's ``data``, or ``None``; never raises."""
    return _parse(data, "b", _BATCH_ACTION_NAMES)


_BATCH_ACTION_NAMES: Mapping[str, BatchAction] = {a: a for a in BATCH_ACTIONS}


def _parse(data: object, target: str, names: Mapping[str, _A]) -> tuple[_A, str] | None:
    """``(action, id)`` from ``v=1&a=<action>&<target>=<id>`` with an action in ``names``.

    The data arrives from the network, so anything but an exact current-version
    triple is refused rather than guessed at.
    """
    fields = _fields(data)
    if fields is None or fields.keys() != {"v", "a", target} or fields["v"] != POSTBACK_VERSION:
        return None
    action, ident = names.get(fields["a"]), fields[target]
    if action is None or not valid_request_id(ident):
        return None
    return action, ident


def _fields(data: object) -> dict[str, str] | None:
    """``key=value&…`` as a dict; ``None`` for anything else, repeated keys included."""
    if not isinstance(data, str) or len(data) > POSTBACK_DATA_MAX:
        return None
    fields: dict[str, str] = {}
    for part in data.split("&"):
        key, sep, value = part.partition("=")
        if not sep or key in fields:
            return None
        fields[key] = value
    return fields


def revoke_postback_data(grant_id: str) -> str:
    """The ``data`` of a listed grant's Revoke button: ``v=1&a=revoke&g=<grant id>``."""
    if not valid_request_id(grant_id):
        raise ValueError(f"cannot build revoke postback data for {grant_id!r}")
    return f"v={POSTBACK_VERSION}&a=revoke&g={grant_id}"


def parse_revoke_postback_data(data: object) -> str | None:
    """The grant id of a Revoke button's ``data``, or ``None``; never raises."""
    parsed = _parse(data, "g", _REVOKE)
    return None if parsed is None else parsed[1]


_DENY_REASON: Mapping[str, Literal["deny_reason"]] = {"deny_reason": "deny_reason"}


def deny_reason_postback_data(request_id: str) -> str:
    """The ``data`` of LINE's "Deny…" button: ``v=1&a=deny_reason&r=<request id>``."""
    return _data("deny_reason", "r", request_id, _DENY_REASON)


def parse_deny_reason_postback_data(data: object) -> str | None:
    """The request id of a "Deny…" button's ``data``, or ``None``; never raises."""
    parsed = _parse(data, "r", _DENY_REASON)
    return None if parsed is None else parsed[1]


def answer_prefill(request_id: str) -> str:
    """What the Reply button types for the approver: ``answer 3fA9xK2b: ``.

    The short id (the one every message shows), not the full id: it reads
    well, fits any keyboard, and the webhook resolves it only among the
    questions that person may answer. 17 characters, against LINE's 300 for
    ``fillInText``. Raises ``ValueError`` for a malformed id.
    """
    if not valid_request_id(request_id):
        raise ValueError(f"cannot build an answer prefill for {request_id!r}")
    return f"answer {request_id[:SHORT_ID_LENGTH]}: "


def parse_answer(text: object) -> tuple[str, str] | None:
    """``(reference, answer)`` from a typed ``answer <reference>: <answer>``, else ``None``.

    The answer is stripped and may be empty (the caller says what is
    missing); a reference shorter than :data:`REFERENCE_MIN` is not an
    answer at all, so "answer me: …" stays ordinary chat. Never raises.
    """
    if not isinstance(text, str):
        return None
    match = _ANSWER.fullmatch(text)
    if match is None:
        return None
    return match["ref"], match["answer"].strip()
