"""Telegram ``Update`` objects, read into the few fields tapgate acts on.

Only two kinds matter: a ``callback_query`` (a press: ``from.id``, the
button's ``data``, the message it was on) and a ``message`` (a command or a
typed reason / answer). Anything else (edited messages, joins, other update
types a mis-set webhook could send) is :data:`other` and ignored.

The body is hostile until read: every field is checked for its type, and an
update that is not a JSON object with an integer ``update_id`` is refused as
:class:`Malformed` (the webhook answers 400, the poll logs and skips it).
An :class:`Update` round-trips through :func:`encode` / :func:`decode` so
that the webhook inbox can store it before the 200 and replay it after a crash.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any, Literal

__all__ = ["Malformed", "Update", "decode", "encode", "read_update", "read_updates"]

Kind = Literal["press", "text", "other"]
_MAX_TEXT = 8192  # Telegram's own is 4096; anything longer is not a person typing


class Malformed(ValueError):
    """Not a Telegram update (or not a list of them)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Update:
    """One update as tapgate reads it. ``bot`` is the bot's id (the token's number):
    update ids are counted per bot, so an event id names both."""

    bot: str
    update_id: int
    kind: Kind
    user_id: str | None = None
    chat_id: str | None = None
    private: bool = False
    query_id: str | None = None
    data: str | None = None
    text: str | None = None
    replying: bool = False
    """A text sent as a reply to one of the bot's messages (a ForceReply prompt's answer)."""
    message_id: int | None = None
    """The pressed message (a press only): how a card tapgate never learnt the id of is found."""

    @property
    def event_id(self) -> str:
        """What the store remembers once this update has been acted on."""
        return f"{self.bot}:{self.update_id}"

    @property
    def may_decide(self) -> bool:
        """A press, or a text in a private chat (a reason or an answer): stored before the 200."""
        return self.user_id is not None and (
            self.kind == "press" or (self.kind == "text" and self.private)
        )


def read_update(bot: str, value: Any) -> Update:
    """The :class:`Update` in ``value`` (one decoded JSON object), or :class:`Malformed`."""
    if not isinstance(value, dict):
        raise Malformed("an update is a JSON object")
    update_id = value.get("update_id")
    if isinstance(update_id, bool) or not isinstance(update_id, int) or update_id < 0:
        raise Malformed("update_id is not a non-negative integer")
    query = value.get("callback_query")
    if isinstance(query, dict):
        return _press(bot, update_id, query)
    message = value.get("message")
    if isinstance(message, dict):
        return _text(bot, update_id, message)
    return Update(bot=bot, update_id=update_id, kind="other")


def read_updates(bot: str, value: Any) -> list[Update]:
    """``getUpdates``' result: a list of updates (each read by :func:`read_update`)."""
    if not isinstance(value, list):
        raise Malformed("getUpdates did not answer a list")
    return [read_update(bot, item) for item in value]


def _press(bot: str, update_id: int, query: dict[str, Any]) -> Update:
    query_id, data = query.get("id"), query.get("data")
    user = _id(query.get("from"))
    message = query.get("message")
    chat = message.get("chat") if isinstance(message, dict) else None
    if not isinstance(query_id, str) or user is None:
        raise Malformed("a callback_query without id or from.id")
    return Update(
        bot=bot,
        update_id=update_id,
        kind="press",
        user_id=user,
        chat_id=_id(chat),
        private=isinstance(chat, dict) and chat.get("type") == "private",
        query_id=query_id,
        data=data if isinstance(data, str) and len(data) <= 64 else None,
        message_id=_message_id(message),
    )


def _message_id(message: object) -> int | None:
    value = message.get("message_id") if isinstance(message, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _text(bot: str, update_id: int, message: dict[str, Any]) -> Update:
    text = message.get("text")
    chat = message.get("chat")
    user = _id(message.get("from"))
    if not isinstance(text, str) or user is None or len(text) > _MAX_TEXT:
        return Update(bot=bot, update_id=update_id, kind="other")
    return Update(
        bot=bot,
        update_id=update_id,
        kind="text",
        user_id=user,
        chat_id=_id(chat),
        private=isinstance(chat, dict) and chat.get("type") == "private",
        text=text,
        replying=_from_bot(message.get("reply_to_message")),
    )


def _from_bot(replied: object) -> bool:
    """Whether ``replied`` (a ``reply_to_message``) is a message a bot sent."""
    sender = replied.get("from") if isinstance(replied, dict) else None
    return isinstance(sender, dict) and sender.get("is_bot") is True


def _id(holder: object) -> str | None:
    """``holder["id"]`` as text when it is an integer (users, chats), else ``None``."""
    if not isinstance(holder, dict):
        return None
    value = holder.get("id")
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return str(value)


def encode(update: Update) -> str:
    """``update`` as the webhook inbox stores it."""
    return json.dumps(asdict(update), separators=(",", ":"))


def decode(payload: str) -> Update | None:
    """An update :func:`encode` stored, or ``None`` if the payload cannot be read."""
    try:
        fields = json.loads(payload)
        return Update(**fields) if isinstance(fields, dict) else None
    except (ValueError, TypeError):
        return None
