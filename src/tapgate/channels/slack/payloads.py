"""Slack's interaction payloads, read into a frozen :class:`Interaction` or ``None``.

An interaction payload is signed (checked first, in :mod:`._slack_signature`),
but its *shape* is still whatever arrived: the fields tapgate acts on (who
tapped, in which workspace and conversation, which button, which request) are
read here, and anything that does not fit is ``None``: the caller answers
400, never 500. The ids of tapgate's own modals (``callback_id``, block ids)
live here too, because a submission is read by them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tapgate.decisions.buttons import (
    SLACK_ACTIONS,
    SLACK_BATCH_ACTIONS,
    SLACK_EDIT_ACTION_ID,
    SLACK_REVOKE_ACTION_ID,
    BatchAction,
    TapAction,
    valid_request_id,
)
from tapgate.decisions.taps import ANSWER_MAX, BatchTap, Tap

__all__ = [
    "ANSWER_ACTION",
    "ANSWER_BLOCK",
    "DENY_ALL_CALLBACK_ID",
    "DENY_CALLBACK_ID",
    "EDIT_ACTION",
    "EDIT_CALLBACK_ID",
    "METADATA_MAX",
    "REASON_ACTION",
    "REASON_BLOCK",
    "REASON_MAX",
    "REPLY_CALLBACK_ID",
    "BatchInteraction",
    "InboxAsk",
    "Interaction",
    "RevokeInteraction",
    "parse_action",
    "parse_batch_action",
    "parse_deny_all_submission",
    "parse_deny_submission",
    "parse_edit_action",
    "parse_edit_submission",
    "parse_reply_submission",
    "parse_revoke",
]

DENY_CALLBACK_ID = "tapgate_deny"
"""``callback_id`` of the deny-reason modal (a namespace apart from ``action_id``)."""
REASON_MAX = 2000
"""Longest reason accepted: plenty for a sentence to the agent, small for the audit log."""
DENY_ALL_CALLBACK_ID = "tapgate_deny_all"
"""``callback_id`` of a batch's "Deny all" reason modal; its metadata names the batch (``b``)."""
REPLY_CALLBACK_ID = "tapgate_reply"
"""``callback_id`` of a question's answer modal."""
EDIT_CALLBACK_ID = "tapgate_edit"
"""``callback_id`` of the edit modal; each argument's input is the block named by its field id."""
EDIT_ACTION = "value"
"""``action_id`` of every input of the edit modal (the block id tells them apart)."""
ANSWER_BLOCK = "answer"
"""``block_id`` of the answer input: where a submission's error is shown."""
REASON_BLOCK = "reason"
REASON_ACTION = "reason"
ANSWER_ACTION = "answer"
METADATA_MAX = 3000
"""Slack's ``private_metadata`` limit."""


@dataclass(frozen=True, kw_only=True, slots=True)
class _From:
    """Who tapped, in which workspace, and where to answer them (see :class:`Interaction`)."""

    user_id: str
    team: str | None
    channel: str | None = None
    trigger_id: str | None = None
    response_url: str | None = None
    reason: str | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class InboxAsk(_From):
    """Who asked for a sign-in link (``/tapgate inbox``, "Open inbox"), where, and the text."""

    text: str

    @classmethod
    def from_button(cls, body: Mapping[str, Any]) -> InboxAsk | None:
        """A card's "Open inbox" button, read as the ``inbox`` command of the one who tapped.

        ``user.team_id`` is the tapper's home workspace, as for every tap.
        """
        user = body.get("user")
        if not isinstance(user, dict) or not isinstance(user.get("id"), str) or not user["id"]:
            return None
        container, url = body.get("container"), body.get("response_url")
        channel = container.get("channel_id") if isinstance(container, dict) else None
        team = user.get("team_id")
        return cls(
            user_id=user["id"],
            team=team if isinstance(team, str) else None,
            channel=channel if isinstance(channel, str) else None,
            response_url=url if isinstance(url, str) else None,
            text="inbox",
        )


@dataclass(frozen=True, kw_only=True, slots=True)
class Interaction(_From):
    """One tap or one modal submission (a deny's reason, a question's answer in ``reason``).

    ``team`` is the tapper's workspace: ``user.team_id``, their home
    workspace, which is what ``approvers[].slack_team`` names; ``None`` when
    the payload does not say. Never the payload's ``team.id``: in a Slack
    Connect channel that is the workspace the *message* lives in, so a
    person from another organisation would pass for one of ours. A tap whose
    workspace is unknown fails any workspace check. ``channel`` is where
    ephemeral answers go.
    """

    action: TapAction
    request_id: str
    edited: Mapping[str, Any] | None = None
    """An edit's arguments, judged before the ack (``core.edits``), approved instead."""

    @property
    def tap(self) -> Tap:
        """What core needs to judge this interaction (:mod:`tapgate.decisions.taps`)."""
        return Tap(
            channel="slack",
            user_id=self.user_id,
            team=self.team,
            action=self.action,
            request_id=self.request_id,
        )


@dataclass(frozen=True, kw_only=True, slots=True)
class BatchInteraction(_From):
    """A tap on a batch card's own buttons, or the "Deny all" modal's submission.

    The same fields as :class:`Interaction` (where to answer, who, which
    workspace), naming a batch instead of a request.
    """

    action: BatchAction
    batch_id: str

    @property
    def request_id(self) -> str:
        """What logs name: the batch (a batch card's taps have no single request)."""
        return self.batch_id

    @property
    def tap(self) -> BatchTap:
        """What core needs to judge this interaction (:func:`tapgate.decisions.taps.tap_batch`)."""
        return BatchTap(
            channel="slack",
            user_id=self.user_id,
            team=self.team,
            action=self.action,
            batch_id=self.batch_id,
        )


@dataclass(frozen=True, kw_only=True, slots=True)
class RevokeInteraction(_From):
    """A tap on the Revoke button of a grant that ``/tapgate grants`` listed.

    ``response_url`` is the listing's own: the answer replaces the listing.
    """

    grant_id: str

    @property
    def action(self) -> str:
        """What logs and the inbox call it."""
        return "revoke"

    @property
    def request_id(self) -> str:
        """What logs name: the grant."""
        return self.grant_id


def parse_revoke(body: object) -> RevokeInteraction | None:
    """The tap in a ``block_actions`` payload of a Revoke button, or ``None``."""
    clicked = _clicked(body)
    if clicked is None or clicked.action_id != SLACK_REVOKE_ACTION_ID:
        return None
    return RevokeInteraction(grant_id=clicked.value, **clicked.where)


def parse_batch_action(body: object) -> BatchInteraction | None:
    """The tap in a ``block_actions`` payload of a batch card's button, or ``None``."""
    clicked = _clicked(body)
    if clicked is None or (action := SLACK_BATCH_ACTIONS.get(clicked.action_id)) is None:
        return None
    return BatchInteraction(action=action, batch_id=clicked.value, **clicked.where)


def parse_deny_all_submission(body: object) -> BatchInteraction | None:
    """The "Deny all" (with its optional reason) in a ``view_submission`` of our batch modal."""
    if not isinstance(body, dict):
        return None
    view = _dict(body.get("view"))
    metadata = _metadata(view.get("private_metadata"), key="b")
    user = _tapper(body)
    if view.get("callback_id") != DENY_ALL_CALLBACK_ID or metadata is None or user is None:
        return None
    values = _dict(_dict(view.get("state")).get("values"))
    typed = _str(_dict(_dict(values.get(REASON_BLOCK)).get(REASON_ACTION)).get("value"))
    typed = typed.strip()[:REASON_MAX] if typed else None
    return BatchInteraction(
        action="deny_all",
        batch_id=metadata[0],
        user_id=user[0],
        team=user[1],
        channel=metadata[1],
        reason=typed or None,
    )


def parse_action(body: object) -> Interaction | None:
    """The tap in a ``block_actions`` payload, or ``None`` if it is not one of ours."""
    clicked = _clicked(body)
    if clicked is None or (action := SLACK_ACTIONS.get(clicked.action_id)) is None:
        return None
    return Interaction(action=action, request_id=clicked.value, **clicked.where)


@dataclass(frozen=True, kw_only=True, slots=True)
class _Click:
    """A button click as every tapgate button sends it: which button, its id, who and where."""

    action_id: str
    value: str
    where: dict[str, Any]
    """``user_id``, ``team``, ``channel``, ``trigger_id``, ``response_url``."""


def _clicked(body: object) -> _Click | None:
    """The first action of a ``block_actions`` payload whose value is an id; else ``None``."""
    if not isinstance(body, dict):
        return None
    actions = body.get("actions")
    if not isinstance(actions, list) or not actions or not isinstance(actions[0], dict):
        return None
    action_id, value, user = (
        _str(actions[0].get("action_id")),
        actions[0].get("value"),
        _tapper(body),
    )
    if action_id is None or user is None or not isinstance(value, str):
        return None
    if not valid_request_id(value):
        return None
    container = _dict(body.get("container"))
    channel = _str(container.get("channel_id")) or _str(_dict(body.get("channel")).get("id"))
    where = {
        "user_id": user[0],
        "team": user[1],
        "channel": channel,
        "trigger_id": _str(body.get("trigger_id")),
        "response_url": _str(body.get("response_url")),
    }
    return _Click(action_id=action_id, value=value, where=where)


def parse_edit_action(body: object) -> Interaction | None:
    """A click on a card's "Edit…" button, as the approval it may become; else ``None``."""
    clicked = _clicked(body)
    if clicked is None or clicked.action_id != SLACK_EDIT_ACTION_ID:
        return None
    return Interaction(action="approve", request_id=clicked.value, **clicked.where)


def parse_edit_submission(body: object) -> tuple[Interaction, dict[str, str | None]] | None:
    """The edit modal's submission: the approval it asks for, and the typed text by field id.

    Only blocks named like a field (``arg0``…) are read; an empty input is ``None``.
    """
    submitted = _submission(body, EDIT_CALLBACK_ID, "approve", ("", ""), 0)
    if submitted is None:
        return None
    assert isinstance(body, dict)  # _submission read it
    values = _dict(_dict(_dict(body.get("view")).get("state")).get("values"))
    texts: dict[str, str | None] = {}
    for block_id, block in values.items():
        if isinstance(block_id, str) and block_id.startswith("arg") and block_id[3:].isdigit():
            typed = _dict(_dict(block).get(EDIT_ACTION)).get("value")
            texts[block_id] = typed if isinstance(typed, str) else None
    return submitted, texts


def parse_deny_submission(body: object) -> Interaction | None:
    """The deny (with its optional reason) in a ``view_submission`` of our modal."""
    return _submission(body, DENY_CALLBACK_ID, "deny", (REASON_BLOCK, REASON_ACTION), REASON_MAX)


def parse_reply_submission(body: object) -> Interaction | None:
    """The answer in a ``view_submission`` of a question's answer modal.

    ``reason`` is the answer, stripped; ``None`` when only blanks were typed
    (the input is required, but Slack counts spaces as an answer).
    """
    block = (ANSWER_BLOCK, ANSWER_ACTION)
    return _submission(body, REPLY_CALLBACK_ID, "reply", block, ANSWER_MAX)


def _submission(
    body: object, callback_id: str, action: TapAction, field: tuple[str, str], max_len: int
) -> Interaction | None:
    """The submission of our modal ``callback_id``: whose, which request, and the typed text."""
    if not isinstance(body, dict):
        return None
    view = _dict(body.get("view"))
    metadata = _metadata(view.get("private_metadata"))
    user = _tapper(body)
    if view.get("callback_id") != callback_id or metadata is None or user is None:
        return None
    request_id, channel = metadata
    values = _dict(_dict(view.get("state")).get("values"))
    typed = _str(_dict(_dict(values.get(field[0])).get(field[1])).get("value"))
    typed = typed.strip()[:max_len] if typed else None
    return _interaction(user, action, request_id, channel, reason=typed or None)


def _interaction(
    user: tuple[str, str | None],
    action: TapAction,
    request_id: str,
    channel: str | None,
    *,
    reason: str | None,
) -> Interaction:
    """An :class:`Interaction` by ``user`` (as :func:`_tapper` read it) and its typed ``reason``."""
    return Interaction(
        action=action,
        request_id=request_id,
        user_id=user[0],
        team=user[1],
        channel=channel,
        reason=reason,
    )


def _tapper(body: dict[str, Any]) -> tuple[str, str | None] | None:
    """``(user id, workspace)`` of whoever clicked; ``None`` without a user id."""
    user = _dict(body.get("user"))
    user_id = _str(user.get("id"))
    if user_id is None:
        return None
    return user_id, _str(user.get("team_id"))


def _metadata(value: object, *, key: str = "r") -> tuple[str, str | None] | None:
    """``(request id, channel)`` from our ``private_metadata`` (``key="b"``: a batch id)."""
    if not isinstance(value, str) or len(value) > METADATA_MAX:
        return None
    try:
        data = json.loads(value)
    except ValueError:
        return None
    if not isinstance(data, dict) or not valid_request_id(data.get(key)):
        return None
    return data[key], _str(data.get("c"))


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _str(value: object) -> str | None:
    """A non-empty string, else ``None``."""
    return value if isinstance(value, str) and value else None
