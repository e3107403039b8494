"""LINE webhook payloads, read after the signature check: the few fields tapgate acts on.

Two readers, chosen per body, both after the signature was verified on the
raw bytes (``_line_signature``, in ``line.py``, before this module sees them):

- a body whose events are all postbacks (a tap: the hot path) is read here,
  by :func:`_postback`, which checks exactly what line-bot-sdk's
  ``PostbackEvent`` model checks (LINE's schema for that one event type:
  strict types, required fields, the three kinds of source) without the
  SDK's pydantic-v1 round trip, about a tenth of a tap's CPU. A test holds
  the two readers to the same answers on generated postbacks, valid and
  broken (``tests/channels/line/test_line_events.py``);
- every other body (messages, follows, and every event type tapgate ignores)
  goes through line-bot-sdk's ``WebhookParser``, which is needed there: it
  owns the many message content types, the other event types and how an
  event newer than the SDK reads (``UnknownEvent``), which decide whether an
  event is skipped or the body refused (below).

The SDK's parser was not written for hostile input, so it runs inside a fence:

- the signature has already been checked on the raw bytes (``_line_signature``);
  the parser checks it again over the decoded text, which for valid UTF-8 is
  the same bytes (a body that is not UTF-8 never gets that far);
- the envelope must be an object with an ``events`` list: the parser would
  happily iterate the keys of ``{"events": {}}``;
- anything the parser raises (``KeyError``, ``TypeError``, pydantic's
  ``ValidationError``, ``RecursionError``) means a malformed body;
- an event tapgate would act on (a postback; a text message that is the
  ``id`` command or a typed answer) that the parser could only read as an
  ``UnknownEvent`` is malformed too, not silently skipped: a tap LINE signed
  but that cannot be read must be a visible 400, not a 200 that did nothing.
  Other events it cannot read (a message of a kind newer than the SDK, a
  "hello" with a mention type it does not know, a follow in standby mode)
  are ignored like any other event tapgate has no use for, so they cannot
  sink a tap in the same batch.

Every such body raises :class:`Malformed`, answered 400 and never 500. A text
message of the form ``answer <reference>: <text>`` (``core.buttons.parse_answer``)
is recognised here as a typed answer.

An :class:`Event` that may decide is stored in the webhook inbox before the
200 (decision 0017-record-before-acknowledge) as :func:`encode` writes it: the narrowed,
verified event, so a replay after a crash needs neither the signature nor
the SDK and acts on exactly what the live path read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from linebot.v3 import WebhookParser
from linebot.v3.webhook import UnknownEvent
from linebot.v3.webhooks import MessageEvent, PostbackEvent, TextMessageContent

from tapgate.channels.line.commands import command_word
from tapgate.decisions.buttons import parse_answer

__all__ = ["Event", "EventReader", "Malformed", "decode", "encode"]

_ID_COMMAND = "id"
# Event types tapgate must read (text messages: see _acted_on); one the SDK cannot is an error.
_ACTED_ON = frozenset({"postback"})


class Malformed(ValueError):
    """A signed body that is not a LINE webhook payload."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Event:
    """The fields of one LINE event that tapgate acts on, read at the boundary.

    ``answer`` is ``(reference, answer)`` when the event is a text message
    typed as an answer to a question; ``command`` the word of a typed
    command (``grants``: see ``_line_commands``).
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
    command: str | None = None

    @property
    def is_id_command(self) -> bool:
        """The ``id`` command: the sender wants their LINE user id."""
        return self.text is not None and self.text.strip().casefold() == _ID_COMMAND

    @property
    def actionable(self) -> bool:
        """A tap, a new follower, a command or an answer; other events are ignored."""
        typed = self.is_id_command or self.command is not None or self.answer is not None
        return self.kind in ("postback", "follow") or typed


class EventReader:
    """Reads verified webhook bodies of one channel: postbacks here, the rest with the SDK."""

    def __init__(self, channel_secret: str) -> None:
        self._parser = WebhookParser(channel_secret)

    def read(self, body: bytes, signature: str) -> list[Event]:
        """The events of a body whose ``signature`` was verified; raises :class:`Malformed`."""
        return self._read(body, signature, sdk_only=False)

    def read_with_sdk(self, body: bytes, signature: str) -> list[Event]:
        """:meth:`read` with line-bot-sdk's parser for postbacks too (tests compare the two)."""
        return self._read(body, signature, sdk_only=True)

    def _read(self, body: bytes, signature: str, *, sdk_only: bool) -> list[Event]:
        try:
            text = body.decode("utf-8")
            envelope = json.loads(text)
            # JSON escapes can spell lone surrogates ("\ud800"), which no store
            # can encode: a typed answer holding one failed in the inbox, a 503.
            json.dumps(envelope, ensure_ascii=False).encode()
        except (ValueError, RecursionError) as error:  # not UTF-8 or JSON; absurd nesting
            raise Malformed("not JSON") from error
        if not isinstance(envelope, dict) or not isinstance(envelope.get("events"), list):
            raise Malformed("no events list")
        raw = envelope["events"]
        if not sdk_only and raw and all(_is_postback(item) for item in raw):
            return [_postback(item, f"events[{index}]") for index, item in enumerate(raw)]
        try:
            parsed = self._parser.parse(text, signature)
        except Exception as error:  # the SDK's own errors are as varied as its input
            raise Malformed(f"line-bot-sdk could not parse it ({type(error).__name__})") from error
        return [_event(item, raw[index], index) for index, item in enumerate(parsed)]


def _is_postback(item: object) -> bool:
    return isinstance(item, dict) and item.get("type") == "postback"


def _event(item: Any, raw: dict[str, Any], index: int) -> Event:
    """Narrow one of the SDK's event models to the fields tapgate acts on."""
    where = f"events[{index}]"
    kind = item.type
    if isinstance(item, UnknownEvent) and _acted_on(raw):
        raise Malformed(f"{where}: a {kind} event line-bot-sdk could not read")
    source = item.source
    text = _message_text(item) if isinstance(item, MessageEvent) else None
    return Event(
        kind=kind,
        event_id=_required_text(item.webhook_event_id, f"{where}.webhookEventId"),
        redelivery=item.delivery_context.is_redelivery,
        reply_token=_text(getattr(item, "reply_token", None), f"{where}.replyToken"),
        source_type=None if source is None else source.type,
        user_id=_text(getattr(source, "user_id", None), f"{where}.source.userId"),
        data=item.postback.data if isinstance(item, PostbackEvent) else None,
        text=text,
        answer=parse_answer(text),
        command=command_word(text),
    )


_SOURCE_IDS = {"user": None, "group": "groupId", "room": "roomId"}
"""The source types LINE sends, and the id each must carry besides an optional ``userId``."""
_MODES = frozenset({"active", "standby"})


def _postback(raw: dict[str, Any], where: str) -> Event:
    """A postback event, checked field by field as line-bot-sdk's ``PostbackEvent`` checks it.

    The SDK's rules (pydantic v1 strict types): ``timestamp`` an integer,
    ``mode`` ``active`` or ``standby``, ``webhookEventId`` a string,
    ``deliveryContext.isRedelivery`` a boolean, ``replyToken`` a string or
    absent, ``source`` absent or a user, group or room source (a group's
    ``groupId``, a room's ``roomId`` required, ``userId`` optional),
    ``postback.data`` a string and ``postback.params`` absent or an object of
    strings; other keys are ignored. Anything else is :class:`Malformed`, as
    a postback the SDK cannot read is (see :func:`_acted_on`). Where the SDK
    would also accept whatever ``dict()`` takes in place of an object (a list
    of key-value pairs, an empty string), this refuses: LINE sends objects.
    """
    timestamp = raw.get("timestamp")
    if not isinstance(timestamp, int) or isinstance(timestamp, bool):
        raise Malformed(f"{where}.timestamp: expected an integer")
    mode = raw.get("mode")
    if not isinstance(mode, str) or mode not in _MODES:
        raise Malformed(f"{where}.mode: expected active or standby")
    delivery = raw.get("deliveryContext")
    if not isinstance(delivery, dict) or not isinstance(delivery.get("isRedelivery"), bool):
        raise Malformed(f"{where}.deliveryContext.isRedelivery: expected a boolean")
    postback = raw.get("postback")
    if not isinstance(postback, dict) or not isinstance(postback.get("data"), str):
        raise Malformed(f"{where}.postback.data: expected a string")
    params = postback.get("params")
    if params is not None and not (
        isinstance(params, dict) and all(isinstance(v, str) for v in params.values())
    ):
        raise Malformed(f"{where}.postback.params: expected an object of strings")
    source = raw.get("source")
    source_type = user_id = None
    if source is not None:
        source_type = source.get("type") if isinstance(source, dict) else None
        if not isinstance(source_type, str) or source_type not in _SOURCE_IDS:
            raise Malformed(f"{where}.source: expected a user, group or room source")
        required = _SOURCE_IDS[source_type]
        if required is not None and not isinstance(source.get(required), str):
            raise Malformed(f"{where}.source.{required}: expected a string")
        user_id = _text(source.get("userId"), f"{where}.source.userId")
    return Event(
        kind="postback",
        event_id=_required_text(raw.get("webhookEventId"), f"{where}.webhookEventId"),
        redelivery=delivery["isRedelivery"],
        reply_token=_text(raw.get("replyToken"), f"{where}.replyToken"),
        source_type=source_type,
        user_id=user_id,
        data=postback["data"],
    )


def encode(event: Event) -> str:
    """``event`` as the inbox stores it (JSON of its fields).

    Built by hand rather than with ``dataclasses.asdict`` (a deep copy that
    was a tenth of the tap's own logic); :func:`decode` reads either.
    """
    fields = {
        "kind": event.kind,
        "event_id": event.event_id,
        "redelivery": event.redelivery,
        "reply_token": event.reply_token,
        "source_type": event.source_type,
        "user_id": event.user_id,
        "data": event.data,
        "text": event.text,
        "answer": None if event.answer is None else list(event.answer),
        "command": event.command,
    }
    return json.dumps(fields, separators=(",", ":"), ensure_ascii=False)


def decode(payload: str) -> Event | None:
    """What :func:`encode` stored; ``None`` for anything else (another version, damage)."""
    try:
        data = json.loads(payload)
        answer = data.pop("answer")
        event = Event(**data, answer=None if answer is None else (answer[0], answer[1]))
    except (ValueError, TypeError, KeyError, IndexError, AttributeError):
        return None
    return event if all(isinstance(v, str) for v in (event.kind, event.event_id)) else None


def _acted_on(raw: dict[str, Any]) -> bool:
    """Whether tapgate would act on ``raw`` (the JSON of an event the SDK could not read).

    A postback always (it is a tap); a text message only when its text is the
    ``id`` command or a typed answer, so that an unreadable "hello" in some
    group cannot sink a tap in the same batch. A follow is only ever answered
    with the user id, and in standby mode LINE sends it without the reply
    token the SDK requires: skipped, not refused.
    """
    if raw.get("type") == "message":
        message = raw.get("message")
        if not isinstance(message, dict) or message.get("type") != "text":
            return False
        text = message.get("text")
        if not isinstance(text, str):
            return False
        typed = command_word(text) is not None or parse_answer(text) is not None
        return text.strip().casefold() == _ID_COMMAND or typed
    return raw.get("type") in _ACTED_ON


def _message_text(item: MessageEvent) -> str | None:
    """The text of a text message; ``None`` for stickers, images and the like."""
    message = item.message
    return message.text if isinstance(message, TextMessageContent) else None


def _text(value: object, where: str) -> str | None:
    """A non-empty string, or ``None`` when the field is absent."""
    return None if value is None else _required_text(value, where)


def _required_text(value: object, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise Malformed(f"{where}: expected a non-empty string")
    if "\x00" in value:  # no LINE id has one, and PostgreSQL cannot store it (a 503, not a 400)
        raise Malformed(f"{where}: contains a NUL character")
    return value
