"""LINE webhook payloads, read after the signature check: the few fields tapgate acts on.

The payload is read with a small parser of our own rather than the SDK's
``WebhookParser``: that parser verifies again over re-encoded text, quietly
turns an event it cannot read into an ``UnknownEvent`` and hands back untyped
pydantic-v1 models. We need a handful of fields of LINE's documented shape;
a signed body that does not have them raises :class:`Malformed` (answered
400, never 500). A text message of the form ``answer <reference>: <text>``
(``core.actions.parse_answer``) is recognised here as a typed answer.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tapgate.core.actions import parse_answer

__all__ = ["Event", "Malformed", "parse_events"]

_ID_COMMAND = "id"


class Malformed(ValueError):
    """A signed body that is not a LINE webhook payload."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Event:
    """The fields of one LINE event that tapgate acts on, read at the boundary.

    ``answer`` is ``(reference, answer)`` when the event is a text message
    typed as an answer to a question.
    """

    kind: str
    event_id: str
    redelivery: bool
    reply_token: str | None
    source_type: str | None
    user_id: str | None
    data: str | None = None
    text: str | None = None
    answer: tuple[str, str] | None = None

    @property
    def is_id_command(self) -> bool:
        """The ``id`` command: the sender wants their LINE user id."""
        return self.text is not None and self.text.strip().casefold() == _ID_COMMAND

    @property
    def actionable(self) -> bool:
        """A tap, a new follower, the ``id`` command or an answer; other events are ignored."""
        return self.kind in ("postback", "follow") or self.is_id_command or self.answer is not None


def parse_events(body: bytes) -> list[Event]:
    """The events of a verified body; raises :class:`Malformed` for anything else."""
    try:
        payload = json.loads(body)
    except (ValueError, RecursionError) as error:  # JSON or UTF-8 errors; absurd nesting
        raise Malformed("not JSON") from error
    events = payload.get("events") if isinstance(payload, dict) else None
    if not isinstance(events, list):
        raise Malformed("no events list")
    return [_event(item, index) for index, item in enumerate(events)]


def _event(item: object, index: int) -> Event:
    where = f"events[{index}]"
    if not isinstance(item, dict):
        raise Malformed(f"{where}: expected an object")
    kind = _required_text(item, "type", where)
    source = _object(item, "source", where) or {}
    context = _object(item, "deliveryContext", where) or {}
    redelivery = context.get("isRedelivery", False)
    if not isinstance(redelivery, bool):
        raise Malformed(f"{where}.deliveryContext.isRedelivery: expected true or false")
    text = _message_text(item, where) if kind == "message" else None
    return Event(
        kind=kind,
        event_id=_required_text(item, "webhookEventId", where),
        redelivery=redelivery,
        reply_token=_text(item, "replyToken", where),
        source_type=_text(source, "type", f"{where}.source"),
        user_id=_text(source, "userId", f"{where}.source"),
        data=_postback_data(item, where) if kind == "postback" else None,
        text=text,
        answer=parse_answer(text),
    )


def _postback_data(item: Mapping[str, Any], where: str) -> str:
    data = _object(item, "postback", where, required=True) or {}
    value = data.get("data")
    if not isinstance(value, str):
        raise Malformed(f"{where}.postback.data: expected a string")
    return value


def _message_text(item: Mapping[str, Any], where: str) -> str | None:
    """The text of a text message; ``None`` for stickers, images and the like."""
    message = _object(item, "message", where, required=True) or {}
    if message.get("type") != "text":
        return None
    text = message.get("text")
    if not isinstance(text, str):
        raise Malformed(f"{where}.message.text: expected a string")
    return text


def _text(obj: Mapping[str, Any], key: str, where: str) -> str | None:
    """A non-empty string field, or ``None`` when it is absent or null."""
    value = obj.get(key)
    return None if value is None else _required_text(obj, key, where)


def _required_text(obj: Mapping[str, Any], key: str, where: str) -> str:
    value = obj.get(key)
    if not isinstance(value, str) or not value:
        raise Malformed(f"{where}.{key}: expected a non-empty string")
    return value


def _object(
    obj: Mapping[str, Any], key: str, where: str, *, required: bool = False
) -> dict[str, Any] | None:
    value = obj.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, dict):
        raise Malformed(f"{where}.{key}: expected an object")
    return value
