"""A fake Telegram Bot API served by a real local aiohttp app (``/bot<token>/<method>``).

It behaves like ``api.telegram.org`` where tapgate depends on it:

- the token in the path (401 ``Unauthorized`` otherwise);
- a bot cannot message a user who never started it: ``sendMessage`` and
  ``getChat`` answer 403 ``Forbidden: bot can't initiate conversation with a
  user`` (or ``bot was blocked by the user``) for anyone not in ``started``;
- ``parse_mode=HTML``: only Telegram's tags, every ``<`` and ``&`` escaped
  (400 ``can't parse entities`` otherwise), text 1-4096 characters after
  entity parsing (400 ``message is too long``), ``callback_data`` 1-64 bytes
  (400 ``BUTTON_DATA_INVALID``), ≤ 8 buttons a row and ≤ 100 in all;
- ``editMessageText`` of a message that is not there (400), or to what it
  shows already (400 ``message is not modified``);
- ``answerCallbackQuery`` once per press and within ``query_ttl`` (400
  ``query is too old…`` after);
- ``getUpdates``: a long poll with offsets (an offset confirms, i.e. drops,
  every update before it; 409 while a webhook is set); ``setWebhook`` checks
  ``secret_token`` (1-256 of ``A-Z a-z 0-9 _ -``);
- :meth:`FakeTelegram.flood`: the next sends answer 429 with
  ``parameters.retry_after``, for every chat of the bot.

Presses and messages are made with :meth:`FakeTelegram.press` and
:meth:`FakeTelegram.type`: they are queued for ``getUpdates`` and returned
for a test to post to a webhook itself (:func:`webhook_headers`).
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import re
import time
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

from aiohttp import web

from tests.fakes._server import Clock, FakeServer, RecordedRequest

__all__ = [
    "BOT_TOKEN",
    "FakeTelegram",
    "TelegramMessage",
    "webhook_headers",
]

BOT_TOKEN = "123456789:AAHfakeTelegramTokenForTapgateTests01"
SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
_SECRET = re.compile(r"[A-Za-z0-9_-]{1,256}")
_TAGS = {"b", "strong", "i", "em", "u", "ins", "s", "strike", "del", "code", "pre", "a"}
_TAGS |= {"span", "tg-spoiler", "blockquote", "tg-emoji"}
_METHODS = (
    "sendMessage",
    "editMessageText",
    "answerCallbackQuery",
    "getUpdates",
    "setWebhook",
    "deleteWebhook",
    "getWebhookInfo",
    "getMe",
    "getChat",
)
_SENDS = {"sendMessage", "editMessageText"}


def webhook_headers(secret: str) -> dict[str, str]:
    """What Telegram sends with every webhook call: JSON, and the secret token."""
    return {"Content-Type": "application/json", SECRET_HEADER: secret}


@dataclass
class TelegramMessage:
    """A message the bot sent, as it is now (``versions`` holds every text it showed)."""

    chat_id: str
    message_id: int
    text: str
    keyboard: list[list[dict[str, Any]]]
    force_reply: bool
    versions: list[str] = field(default_factory=list)

    @property
    def shown(self) -> str:
        """The text as the user sees it (tags dropped, entities decoded)."""
        return _visible(self.text)

    def data(self, label_prefix: str) -> str:
        """The ``callback_data`` of the first button whose label starts with ``label_prefix``."""
        for row in self.keyboard:
            for button in row:
                if str(button.get("text", "")).startswith(label_prefix):
                    return str(button["callback_data"])
        raise KeyError(f"no button {label_prefix!r} on message {self.message_id}")


class _Checker(HTMLParser):
    """Telegram's HTML rules, as strictly as tapgate must meet them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=False)
        self.stack: list[str] = []
        self.error: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in _TAGS:
            self.error = f'unsupported start tag "{tag}"'
        self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack.pop() != tag:
            self.error = f'unmatched end tag "{tag}"'

    def handle_entityref(self, name: str) -> None:
        if name not in {"lt", "gt", "amp", "quot"}:
            self.error = f'unsupported entity "&{name};"'


def _html_error(text: str) -> str | None:
    if re.search(r"&(?![a-zA-Z]+;|#[0-9]+;|#x[0-9a-fA-F]+;)", text):
        return 'unescaped "&"'
    if re.search(r"<(?![a-zA-Z/])", text):
        return 'unescaped "<"'
    checker = _Checker()
    checker.feed(text)
    checker.close()
    if checker.error is None and checker.stack:
        return f'unclosed tag "{checker.stack[-1]}"'
    return checker.error


def _visible(text: str) -> str:
    return html.unescape(re.sub(r"<[^>]*>", "", text))


class FakeTelegram(FakeServer):
    """Fake Bot API for one bot. ``started``: user ids that pressed Start (reachable).

    ``messages`` maps ``(chat_id, message_id)`` to what the chat shows now;
    ``answers`` records each ``answerCallbackQuery`` as ``(query id, text)``.
    """

    endpoints = _METHODS

    def __init__(
        self,
        *,
        token: str = BOT_TOKEN,
        started: set[str] | None = None,
        clock: Clock = time.monotonic,
        query_ttl: float = 15.0,
    ) -> None:
        super().__init__(clock=clock)
        self.token = token
        self.started: set[str] = set(started or ())
        self.blocked: set[str] = set()
        self.query_ttl = query_ttl
        self.messages: dict[tuple[str, int], TelegramMessage] = {}
        self.answers: list[tuple[str, str | None]] = []
        self.webhook: dict[str, Any] | None = None
        self.webhook_error: str | None = None
        """``getWebhookInfo``'s ``last_error_message``: Telegram's last failed delivery."""
        self._updates: list[dict[str, Any]] = []
        self._next_update = 700_000_001
        self._next_message = 1
        self._queries: dict[str, float] = {}
        self._answered: set[str] = set()
        self._flood: list[float] = []
        self._arrived = asyncio.Condition()
        for method in _METHODS:
            action = getattr(self, f"_{method}")
            self._app.router.add_post(f"/bot{{token}}/{method}", self._endpoint(method, action))
        self._app.router.add_route("*", "/{tail:.*}", self._endpoint("unknown", self._not_found))

    # -- scripting ----------------------------------------------------------------------

    def flood(self, retry_after: int, times: int = 1) -> None:
        """The next ``times`` sends (any chat) answer 429 with ``retry_after`` seconds."""
        self._flood.extend([float(retry_after)] * times)

    def in_chat(self, chat_id: str) -> list[TelegramMessage]:
        """The bot's messages in ``chat_id``, oldest first."""
        return [m for (chat, _), m in sorted(self.messages.items()) if chat == chat_id]

    def cards(self, chat_id: str) -> list[TelegramMessage]:
        """The messages in ``chat_id`` that carried buttons when sent (the approval cards)."""
        return [m for m in self.in_chat(chat_id) if m.versions and "Request" in m.versions[0]]

    async def press(self, user_id: str, message: TelegramMessage, data: str) -> dict[str, Any]:
        """``user_id`` presses the button carrying ``data`` on ``message``: the update."""
        query_id = f"q{self._next_update}"
        self._queries[query_id] = self.clock()
        chat = {"id": int(message.chat_id), "type": "private"}
        update = self._update(
            {
                "callback_query": {
                    "id": query_id,
                    "from": {"id": int(user_id), "is_bot": False, "first_name": "x"},
                    "message": {"message_id": message.message_id, "date": 1, "chat": chat},
                    "chat_instance": "1",
                    "data": data,
                }
            }
        )
        await self._enqueue(update)
        return update

    async def type(
        self,
        user_id: str,
        text: str,
        *,
        chat_type: str = "private",
        reply_to: TelegramMessage | None = None,
    ) -> dict[str, Any]:
        """``user_id`` sends ``text`` to the bot (in their private chat): the update.

        ``reply_to``: the bot's message it answers (what a ``ForceReply``
        prompt makes the client do): Telegram then adds ``reply_to_message``.
        """
        chat_id = int(user_id) if chat_type == "private" else -100123
        message: dict[str, Any] = {
            "message_id": self._next_update,
            "date": 1,
            "from": {"id": int(user_id), "is_bot": False, "first_name": "x"},
            "chat": {"id": chat_id, "type": chat_type},
            "text": text,
        }
        if reply_to is not None:
            bot = {"id": int(self.token.split(":", 1)[0]), "is_bot": True, "first_name": "bot"}
            message["reply_to_message"] = {
                "message_id": reply_to.message_id,
                "date": 1,
                "from": bot,
                "chat": {"id": int(reply_to.chat_id), "type": "private"},
                "text": reply_to.shown,
            }
        update = self._update({"message": message})
        await self._enqueue(update)
        return update

    def _update(self, body: dict[str, Any]) -> dict[str, Any]:
        update = {"update_id": self._next_update, **body}
        self._next_update += 1
        return update

    async def _enqueue(self, update: dict[str, Any]) -> None:
        if self.webhook is not None:
            return  # Telegram posts it to the webhook instead (the test does, with the secret)
        async with self._arrived:
            self._updates.append(update)
            self._arrived.notify_all()

    def pending_updates(self) -> int:
        """Updates not yet confirmed by an offset."""
        return len(self._updates)

    # -- answers ------------------------------------------------------------------------

    def _ok(self, result: Any) -> web.Response:
        return self._json({"ok": True, "result": result})

    def _error(self, code: int, description: str, **parameters: Any) -> web.Response:
        body: dict[str, Any] = {"ok": False, "error_code": code, "description": description}
        if parameters:
            body["parameters"] = parameters
        return self._json(body, code)

    def _fault_body(self, code: int) -> Any:
        return {"ok": False, "error_code": code, "description": f"HTTP {code}"}

    def _check(self, req: RecordedRequest) -> web.Response | None:
        if req.path.split("/")[1] != f"bot{self.token}":
            return self._error(401, "Unauthorized")
        if req.endpoint in _SENDS and self._flood:
            wait = self._flood.pop(0)
            return self._error(429, f"Too Many Requests: retry after {wait:.0f}", retry_after=wait)
        return None

    def _reachable(self, chat_id: str) -> web.Response | None:
        if chat_id in self.blocked:
            return self._error(403, "Forbidden: bot was blocked by the user")
        if chat_id not in self.started:
            return self._error(403, "Forbidden: bot can't initiate conversation with a user")
        return None

    def _invalid_message(self, args: dict[str, Any]) -> web.Response | None:
        text = args.get("text")
        if not isinstance(text, str) or not text:
            return self._error(400, "Bad Request: message text is empty")
        if args.get("parse_mode") == "HTML" and (error := _html_error(text)) is not None:
            return self._error(400, f"Bad Request: can't parse entities: {error}")
        if len(_visible(text).encode("utf-16-le")) // 2 > 4096:
            return self._error(400, "Bad Request: message is too long")
        rows = (args.get("reply_markup") or {}).get("inline_keyboard") or []
        if sum(len(r) for r in rows) > 100 or any(len(r) > 8 for r in rows):
            return self._error(400, "Bad Request: reply markup is too long")
        for row in rows:
            for button in row:
                data = button.get("callback_data", "")
                if not isinstance(data, str) or not 1 <= len(data.encode()) <= 64:
                    return self._error(400, "Bad Request: BUTTON_DATA_INVALID")
        return None

    # -- methods ------------------------------------------------------------------------

    async def _sendMessage(self, req: RecordedRequest) -> web.Response:
        args = req.args
        chat_id = str(args.get("chat_id"))
        if (refused := self._check(req) or self._reachable(chat_id)) is not None:
            return refused
        if (invalid := self._invalid_message(args)) is not None:
            return invalid
        markup = args.get("reply_markup") or {}
        message = TelegramMessage(
            chat_id=chat_id,
            message_id=self._next_message,
            text=args["text"],
            keyboard=markup.get("inline_keyboard") or [],
            force_reply=bool(markup.get("force_reply")),
            versions=[args["text"]],
        )
        self._next_message += 1
        self.messages[(chat_id, message.message_id)] = message
        return self._ok({"message_id": message.message_id, "chat": {"id": int(chat_id)}})

    async def _editMessageText(self, req: RecordedRequest) -> web.Response:
        args = req.args
        if (refused := self._check(req)) is not None:
            return refused
        found = self.messages.get((str(args.get("chat_id")), int(args.get("message_id", 0))))
        if found is None:
            return self._error(400, "Bad Request: message to edit not found")
        if (invalid := self._invalid_message(args)) is not None:
            return invalid
        keyboard = (args.get("reply_markup") or {}).get("inline_keyboard") or []
        if args["text"] == found.text and keyboard == found.keyboard:
            return self._error(
                400,
                "Bad Request: message is not modified: specified new message content and "
                "reply markup are exactly the same as a current content and reply markup "
                "of the message",
            )
        found.text, found.keyboard = args["text"], keyboard
        found.versions.append(args["text"])
        return self._ok({"message_id": found.message_id})

    async def _answerCallbackQuery(self, req: RecordedRequest) -> web.Response:
        args = req.args
        if (refused := self._check(req)) is not None:
            return refused
        query_id = str(args.get("callback_query_id"))
        asked = self._queries.get(query_id)
        too_old = asked is None or self.clock() - asked > self.query_ttl
        if too_old or query_id in self._answered:
            return self._error(
                400,
                "Bad Request: query is too old and response timeout expired or query ID is invalid",
            )
        text = args.get("text")
        if text is not None and len(str(text)) > 200:
            return self._error(400, "Bad Request: MESSAGE_TOO_LONG")
        self._answered.add(query_id)
        self.answers.append((query_id, text))
        return self._ok(True)

    async def _getUpdates(self, req: RecordedRequest) -> web.Response:
        args = req.args
        if (refused := self._check(req)) is not None:
            return refused
        if self.webhook is not None:
            return self._error(
                409,
                "Conflict: can't use getUpdates method while webhook is active; "
                "use deleteWebhook to delete the webhook first",
            )
        offset = args.get("offset")
        if isinstance(offset, int):
            self._updates = [u for u in self._updates if u["update_id"] >= offset]
        timeout = float(args.get("timeout") or 0)
        async with self._arrived:
            if not self._updates and timeout > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._arrived.wait(), timeout)
            return self._ok(list(self._updates[:100]))

    async def _setWebhook(self, req: RecordedRequest) -> web.Response:
        args = req.args
        if (refused := self._check(req)) is not None:
            return refused
        secret = args.get("secret_token")
        if secret is not None and not _SECRET.fullmatch(str(secret)):
            return self._error(400, "Bad Request: secret token contains unallowed characters")
        url = str(args.get("url") or "")
        if url and not url.startswith("https://"):
            return self._error(400, "Bad Request: bad webhook: An HTTPS URL must be provided")
        self.webhook = {"url": url, "secret_token": secret, **args} if url else None
        return self._ok(True)

    async def _deleteWebhook(self, req: RecordedRequest) -> web.Response:
        if (refused := self._check(req)) is not None:
            return refused
        self.webhook = None
        return self._ok(True)

    async def _getWebhookInfo(self, req: RecordedRequest) -> web.Response:
        if (refused := self._check(req)) is not None:
            return refused
        url = self.webhook["url"] if self.webhook else ""
        info: dict[str, Any] = {"url": url, "pending_update_count": 0}
        if self.webhook_error is not None:
            info["last_error_date"] = 1
            info["last_error_message"] = self.webhook_error
        return self._ok(info)

    async def _getMe(self, req: RecordedRequest) -> web.Response:
        if (refused := self._check(req)) is not None:
            return refused
        bot_id = int(self.token.split(":", 1)[0])
        return self._ok({"id": bot_id, "is_bot": True, "username": "tapgate_test_bot"})

    async def _getChat(self, req: RecordedRequest) -> web.Response:
        chat_id = str(req.args.get("chat_id"))
        if (refused := self._check(req)) is not None:
            return refused
        if chat_id not in self.started:
            return self._error(400, "Bad Request: chat not found")
        return self._ok({"id": int(chat_id), "type": "private"})

    async def _not_found(self, req: RecordedRequest) -> web.Response:
        return self._error(404, "Not Found")
