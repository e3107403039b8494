"""A Slack interaction as the inbox keeps it: a stable event id, and the parsed tap.

Slack gives interactions no event id (its Events API has one; interactivity
does not), yet the inbox and the decision's transaction need one to tell a
second delivery or a replay of the *same* act from a new act
(docs/architecture.md, "No tap lost after the ack"). :func:`event_id` is
a SHA-256 over the fields that name one act by one person:

- ``trigger_id``: minted by Slack once per user interaction (a click, a
  modal submission) and carried unchanged by any delivery of it, including
  Socket Mode's re-sends of an unacknowledged envelope;
- ``actions[0].action_ts`` (a click) or ``view.id`` (a submission): the act
  itself, so that two acts can never share an id even if a trigger did;
- the payload ``type``, the ``user.id`` and ``user.team_id``: whose act.

Not a hash of the whole payload: that also covers what Slack shows *around*
the act (the message's blocks, the view's hash, ``is_enterprise_install``),
which a re-send may render differently. A payload without a ``trigger_id``
(Slack always sends one; a hand-made signed payload might not) falls back
to the hash of the whole payload, canonical JSON, which is still stable for
the same bytes.

What is stored is the parsed :class:`Interaction` / :class:`BatchInteraction`
(versioned JSON; an edit's judged arguments in ``edited``), not the raw
payload: the replay needs no bolt, and reads exactly what the live path
decided on. The ``trigger_id`` is left out: it
expires 3 seconds after the click, long before any replay.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from tapgate.channels.slack.payloads import BatchInteraction, Interaction, RevokeInteraction
from tapgate.decisions.buttons import (
    SLACK_ACTIONS,
    SLACK_BATCH_ACTIONS,
    valid_request_id,
)

__all__ = ["decode", "encode", "event_id"]

_VERSION = 1
_TAP_ACTIONS = frozenset(SLACK_ACTIONS.values())
_BATCH_ACTIONS = frozenset(SLACK_BATCH_ACTIONS.values())
_OPTIONAL = ("team", "channel", "response_url", "reason")


def event_id(body: dict[str, Any]) -> str:
    """The stable id of the act in a verified interaction payload (32 hex characters)."""
    trigger = body.get("trigger_id")
    if not isinstance(trigger, str) or not trigger:
        whole = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(whole.encode("utf-8")).hexdigest()[:32]
    user = _dict(body.get("user"))
    actions = body.get("actions")
    first = _dict(actions[0]) if isinstance(actions, list) and actions else {}
    act = first.get("action_ts") or _dict(body.get("view")).get("id")
    key = [body.get("type"), user.get("id"), user.get("team_id"), trigger, act]
    text = json.dumps(key, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def encode(interaction: Interaction | BatchInteraction | RevokeInteraction) -> str:
    """The interaction as the inbox stores it: what deciding and answering need.

    A Revoke tap is marked ``"revoke": true`` (its ``id`` a grant id), so no
    older reader can take it for a tap on a request.
    """
    data: dict[str, Any] = {
        "v": _VERSION,
        "batch": isinstance(interaction, BatchInteraction),
        "action": interaction.action,
        "id": interaction.request_id,
        "user_id": interaction.user_id,
    }
    if isinstance(interaction, RevokeInteraction):
        data["revoke"] = True
    for name in _OPTIONAL:
        value = getattr(interaction, name)
        if value is not None:
            data[name] = value
    if isinstance(interaction, Interaction) and interaction.edited is not None:
        data["edited"] = dict(interaction.edited)  # what the approver approved, to replay it
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


def decode(payload: str) -> Interaction | BatchInteraction | RevokeInteraction | None:
    """What :func:`encode` stored; ``None`` for anything else (another version, damage)."""
    data = _stored(payload)
    if data is None:
        return None
    user_id, target, action = data.get("user_id"), data.get("id", ""), data.get("action")
    optional = {name: data.get(name) for name in _OPTIONAL}
    well_formed = (
        isinstance(user_id, str)
        and isinstance(target, str)
        and valid_request_id(target)
        and all(value is None or isinstance(value, str) for value in optional.values())
    )
    if not well_formed or not isinstance(user_id, str):  # mypy narrows only the second
        return None
    if data.get("revoke") is True:
        return RevokeInteraction(grant_id=target, user_id=user_id, **optional)
    if data.get("batch") is True and action in _BATCH_ACTIONS:
        return BatchInteraction(action=action, batch_id=target, user_id=user_id, **optional)
    edited = data.get("edited")
    edit_ok = edited is None or (isinstance(edited, dict) and action == "approve")
    if edit_ok and data.get("batch") is False and action in _TAP_ACTIONS:
        return Interaction(
            action=action, request_id=target, user_id=user_id, edited=edited, **optional
        )
    return None


def _stored(payload: str) -> dict[str, Any] | None:
    """The stored JSON object of this version, else ``None``."""
    try:
        data = json.loads(payload)
    except ValueError:
        return None
    return data if isinstance(data, dict) and data.get("v") == _VERSION else None


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
