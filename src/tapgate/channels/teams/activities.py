"""Bot Framework activities, read after the token check: the few fields tapgate acts on.

An activity is JSON the Bot Connector posts to ``/webhooks/teams``. Only its
token says who sent it (:mod:`.auth`); this module reads a verified body
into an :class:`Activity` and refuses anything that is not shaped like one
(:class:`Malformed`, answered 400). Kinds tapgate acts on:

- ``invoke`` named ``adaptiveCard/action``: a press of a card's
  ``Action.Execute`` button; the card's ``data`` (and its inputs, merged in by
  Teams) is at ``value.action.data``;
- ``message`` with a ``value``: the same press from a client that only knows
  ``Action.Submit`` (the fallback each button carries); the card is
  ``replyToId``;
- ``message`` with text: a typed command (``id``, ``help``);
- ``conversationUpdate`` and ``installationUpdate``: the app added to a
  personal chat, which tells tapgate where it may post to that person.

The presser is ``from.aadObjectId`` in ``conversation.tenantId`` (Microsoft
Entra's object id, the same for every app), never ``from.id`` (a ``29:`` id
that differs per bot) nor a display name.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["DATA_KEY", "INVOKE_NAME", "Activity", "Malformed", "decode", "encode", "read"]

INVOKE_NAME = "adaptiveCard/action"
DATA_KEY = "tg"
"""The key of a button's ``data`` holding tapgate's versioned action string."""
_INPUTS = ("reason", "answer")
_TEXT_MAX = 4000  # a reason or an answer longer than this is refused by the domain anyway
_ID_MAX = 512


class Malformed(ValueError):
    """A verified body that is not an activity tapgate can read."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Activity:
    """The fields of one activity tapgate acts on, read at the boundary."""

    kind: str
    activity_id: str
    channel_id: str
    service_url: str
    user_id: str
    conversation_id: str
    name: str | None = None
    aad_object_id: str | None = None
    tenant_id: str | None = None
    conversation_type: str | None = None
    action: str | None = None
    """A button's action string (``v=1&a=approve&r=…``), for a press."""
    inputs: tuple[tuple[str, str], ...] = ()
    """The card's inputs that came with a press (``reason``, ``answer``)."""
    reply_to_id: str | None = None
    text: str | None = None
    install_action: str | None = None

    @property
    def is_press(self) -> bool:
        """A card button: an ``adaptiveCard/action`` invoke or an ``Action.Submit`` message."""
        return self.action is not None and (
            (self.kind == "invoke" and self.name == INVOKE_NAME) or self.kind == "message"
        )

    @property
    def is_invoke(self) -> bool:
        """Teams waits for this request's answer (an invoke response)."""
        return self.kind == "invoke"

    @property
    def presser(self) -> str:
        """``<tenant>/<object id>`` as approvers are configured (else the ``29:`` id)."""
        if self.tenant_id and self.aad_object_id:
            return f"{self.tenant_id}/{self.aad_object_id}".lower()
        return self.user_id

    def input(self, name: str) -> str | None:
        """The value of the card input ``name`` that came with a press, if any."""
        return next((value for key, value in self.inputs if key == name), None)


def read(body: bytes) -> Activity:
    """The :class:`Activity` in ``body``; :class:`Malformed` for anything else."""
    try:
        raw = json.loads(body.decode("utf-8"))
    except (ValueError, RecursionError) as error:
        raise Malformed("not JSON") from error
    if not isinstance(raw, dict):
        raise Malformed("not an object")
    kind = _text(raw, "type")
    conversation = _object(raw, "conversation")
    sender = _object(raw, "from")
    channel_data = raw.get("channelData")
    tenant = conversation.get("tenantId")
    if tenant is None and isinstance(channel_data, dict):
        found = channel_data.get("tenant")
        tenant = found.get("id") if isinstance(found, dict) else None
    action, inputs = _press(kind, raw)
    return Activity(
        kind=kind,
        activity_id=_text(raw, "id"),
        channel_id=_text(raw, "channelId"),
        service_url=_text(raw, "serviceUrl"),
        user_id=_text(sender, "id"),
        conversation_id=_text(conversation, "id"),
        name=_optional(raw.get("name"), "name"),
        aad_object_id=_optional(sender.get("aadObjectId"), "from.aadObjectId"),
        tenant_id=_optional(tenant, "conversation.tenantId"),
        conversation_type=_optional(conversation.get("conversationType"), "conversationType"),
        action=action,
        inputs=inputs,
        reply_to_id=_optional(raw.get("replyToId"), "replyToId"),
        text=_optional(raw.get("text"), "text", limit=_TEXT_MAX),
        install_action=_optional(raw.get("action"), "action"),
    )


def _press(kind: str, raw: dict[str, Any]) -> tuple[str | None, tuple[tuple[str, str], ...]]:
    """The action string and inputs of a press (``None`` when the activity is not one)."""
    value = raw.get("value")
    if kind == "invoke":
        if raw.get("name") != INVOKE_NAME:
            return None, ()
        action = value.get("action") if isinstance(value, dict) else None
        if not isinstance(action, dict) or not isinstance(action.get("data"), dict):
            raise Malformed("value.action.data: expected an object")
        data: dict[str, Any] = action["data"]
    elif kind == "message" and isinstance(value, dict) and DATA_KEY in value:
        data = value
    else:
        return None, ()
    tapped = data.get(DATA_KEY)
    if not isinstance(tapped, str) or len(tapped) > _ID_MAX:
        raise Malformed(f"{DATA_KEY}: expected tapgate's action string")
    inputs = tuple(
        (name, data[name][:_TEXT_MAX])
        for name in _INPUTS
        if isinstance(data.get(name), str) and data[name].strip()
    )
    return tapped, inputs


def _object(raw: dict[str, Any], key: str) -> dict[str, Any]:
    value = raw.get(key)
    if not isinstance(value, dict):
        raise Malformed(f"{key}: expected an object")
    return value


def _text(raw: dict[str, Any], key: str) -> str:
    value = raw.get(key)
    if not isinstance(value, str) or not value or len(value) > _ID_MAX or "\x00" in value:
        raise Malformed(f"{key}: expected a non-empty string")
    return value


def _optional(value: object, where: str, limit: int = _ID_MAX) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > limit or "\x00" in value:
        raise Malformed(f"{where}: expected a string")
    return value or None


def encode(activity: Activity) -> str:
    """``activity`` as the webhook inbox stores it (a replay needs no token again)."""
    return json.dumps(asdict(activity), separators=(",", ":"), ensure_ascii=False)


def decode(payload: str) -> Activity | None:
    """What :func:`encode` stored; ``None`` for anything else."""
    try:
        fields = json.loads(payload)
        fields["inputs"] = tuple((str(k), str(v)) for k, v in fields.get("inputs", ()))
        return Activity(**fields)
    except (ValueError, TypeError, KeyError, AttributeError):
        return None
