"""Telegram's inbound side: updates by long poll or webhook, stored, acknowledged, then applied.

Two ways in, one path after::

    webhook  POST /webhooks/telegram ──X-Telegram-Bot-Api-Secret-Token──► 401 | JSON ──► 400
    polling  getUpdates(offset) ──────────────────────────────────────────► a list of updates
                 │
                 ▼  presses and private texts ──inbox.record (one INSERT)──► 503 / offset kept
                 ▼  200 / offset = last + 1 (Telegram's acknowledgement)
                 ▼  applied in a task owned here: ``taps`` decides, then answerCallbackQuery
                    (at once), then the reply message; cards are redrawn by the dispatcher
                    from the stored outcome, on every channel

Exactly once: an update is stored before Telegram is told it arrived (the
200, or the next ``getUpdates`` offset, which confirms everything before it),
and its event id (``<bot id>:<update_id>``) is remembered in the transaction
that acts on it. So a redelivery (Telegram retries a webhook that did not
answer 2xx; a poll that died before confirming is answered the same updates
again) and a replay after a crash each act once.

The webhook secret is compared in constant time on the header, before the
body is parsed: Telegram signs nothing, so the secret is the only proof a
call came from Telegram.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import time
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

import aiohttp
from aiohttp import web

from tapgate.channels.contract import Handler
from tapgate.channels.tap_log import TapLog
from tapgate.channels.telegram.api import BotApi, BotApiError
from tapgate.channels.telegram.commands import Say
from tapgate.channels.telegram.stale import StaleCards
from tapgate.channels.telegram.taps import Answer, TelegramTaps
from tapgate.channels.telegram.updates import Malformed, Update, decode, encode, read_update
from tapgate.decisions.chat_commands import LinkMaker
from tapgate.decisions.typed_reasons import Reasons
from tapgate.decisions.webhook_inbox import Inbox, InboxItem
from tapgate.delivery.retry import TRANSPORT_ERRORS
from tapgate.gate.gate import Gate

__all__ = ["ALLOWED_UPDATES", "SECRET_HEADER", "TelegramReceiver"]

_log = logging.getLogger("tapgate.channels.telegram")

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"  # noqa: S105 - a header name, not a secret
ALLOWED_UPDATES = ("message", "callback_query")
_TRY_AGAIN = "tapgate could not record that just now; please try again."
_CONFLICT = 409
_POLL_BACKOFF = (1.0, 30.0)


class TelegramReceiver:
    """Receives one bot's updates (polling or webhook) and resolves presses through ``gate``.

    ``bot`` is the bot's id (the token's number); ``secret`` the webhook's
    ``secret_token`` (``None`` in polling mode: the route is then not served).
    """

    def __init__(
        self,
        *,
        gate: Gate,
        api: BotApi,
        bot: str,
        inbox: Inbox,
        secret: str | None = None,
        reason_window: float = 300.0,
        poll_timeout: int = 30,
        tap_log: int | None = logging.INFO,
        links: LinkMaker | None = None,
        on_reject: Callable[[str], None] | None = None,
        on_decision: Callable[[float], None] | None = None,
        sleep: Callable[[float], Coroutine[Any, Any, None]] = asyncio.sleep,
    ) -> None:
        self._gate = gate
        self._api = api
        self._bot = bot
        self._inbox = inbox
        self._secret = None if secret is None else secret.encode("utf-8")
        self._poll_timeout = poll_timeout
        self._on_reject = on_reject
        self._sleep = sleep
        self._tasks: set[asyncio.Task[None]] = set()
        self._poller: asyncio.Task[None] | None = None
        self._closed = False
        self.offset: int | None = None
        """The next ``getUpdates`` offset: every update before it is stored and confirmed."""
        logged = TapLog(_log, "Telegram", level=tap_log, on_decision=on_decision)
        reasons = Reasons(gate, channel="telegram", window=reason_window)
        self._taps = TelegramTaps(gate, reasons=reasons, tap_log=logged, links=links)
        self._stale = StaleCards(gate, api)
        inbox.register("telegram", self._replay)

    # -- webhook ------------------------------------------------------------------------

    async def handle(self, headers: Mapping[str, str], body: bytes) -> tuple[int, dict[str, str]]:
        """Verify, parse, store, acknowledge; the status and JSON body. Never raises for bad input.

        401 without the secret header (before anything is parsed), 400 for a
        body that is not an update, 503 when it could not be stored (Telegram
        sends it again), else 200 once stored; it is applied after the 200.
        """
        offered = headers.get(SECRET_HEADER) or ""
        if self._secret is None or not hmac.compare_digest(offered.encode("utf-8"), self._secret):
            _log.warning("Telegram webhook refused: missing or wrong secret token")
            return self._reject("signature", 401, "invalid secret token")
        started = time.perf_counter()
        try:
            update = read_update(self._bot, json.loads(body))
        except (ValueError, Malformed) as error:  # bad JSON is a ValueError too
            _log.warning("Telegram webhook refused: not an update (%s)", type(error).__name__)
            return self._reject("payload", 400, "malformed update")
        try:
            await self._store([update], started)
        except Exception:  # no 200: nothing was stored, nothing must be lost
            _log.exception("Telegram update could not be stored; answered 503")
            return 503, {"error": "try again"}
        return 200, {}

    async def _webhook(self, request: web.Request) -> web.Response:
        try:
            body = await request.read()
        except web.RequestPayloadError:
            _log.warning("Telegram webhook refused: unreadable body")
            status, answer = self._reject("payload", 400, "unreadable body")
        else:
            status, answer = await self.handle(request.headers, body)
        return web.json_response(answer, status=status)

    def handler(self, route: str) -> Handler:
        """The one route's handler (``webhook``)."""
        del route
        return self._webhook

    def _reject(self, reason: str, status: int, error: str) -> tuple[int, dict[str, str]]:
        if self._on_reject is not None:
            self._on_reject(reason)
        return status, {"error": error}

    # -- polling ------------------------------------------------------------------------

    def start_polling(self) -> None:
        """Start the long poll, owned here and cancelled by :meth:`close`."""
        if self._poller is None:
            self._poller = asyncio.create_task(self._poll_forever())

    async def _poll_forever(self) -> None:
        """Poll until closed; a failure backs off (1 s doubling to 30 s, or Telegram's
        ``retry_after``) on the injected ``sleep``, and a run of the same failure is
        logged once (a 409 from a set webhook would otherwise fill the log every 30 s)."""
        failures = 0
        logged: str | None = None
        while not self._closed:
            try:
                await self.poll_once()
            except asyncio.CancelledError:
                raise
            except Exception as error:  # the poll must outlive any one failure
                failures += 1
                delay = min(_POLL_BACKOFF[0] * 2 ** min(failures - 1, 8), _POLL_BACKOFF[1])
                if isinstance(error, BotApiError) and error.retry_after is not None:
                    delay = max(delay, error.retry_after)
                kind = _failure_kind(error)
                _log_poll_failure(error, delay, again=kind == logged)
                logged = kind
                await self._sleep(delay)
                continue
            if logged is not None:
                _log.info("Telegram getUpdates works again after %d failed attempts", failures)
            failures, logged = 0, None

    async def poll_once(self) -> int:
        """One ``getUpdates``: store what came, then move the offset past it. How many came."""
        payload: dict[str, Any] = {
            "timeout": self._poll_timeout,
            "allowed_updates": list(ALLOWED_UPDATES),
        }
        if self.offset is not None:
            payload["offset"] = self.offset
        raw = await self._api.call("getUpdates", payload, wait=self._poll_timeout)
        if not isinstance(raw, list):
            raise Malformed("getUpdates did not answer a list")
        started = time.perf_counter()
        updates: list[Update] = []
        last: int | None = None
        for item in raw:
            ident = item.get("update_id") if isinstance(item, dict) else None
            if isinstance(ident, int) and not isinstance(ident, bool):
                last = ident if last is None else max(last, ident)
            try:
                updates.append(read_update(self._bot, item))
            except Malformed as error:
                _log.warning("Telegram update skipped: %s", error)
        await self._store(updates, started)  # raises: the offset stays, the same come again
        if last is not None:
            self.offset = last + 1  # the next call confirms them to Telegram
        return len(raw)

    # -- after the acknowledgement ------------------------------------------------------

    async def _store(self, updates: list[Update], started: float | None) -> None:
        acting = [u for u in updates if u.may_decide]
        if not acting:
            return
        await self._inbox.record("telegram", [(u.event_id, encode(u)) for u in acting])
        self._start(self._apply(acting, started))

    def _replay(self, item: InboxItem) -> None:
        update = decode(item.payload)
        if update is None:
            _log.error("stored Telegram update %s cannot be read; left alone", item.event_id)
            return
        self._start(self._apply([update], None))

    async def _apply(self, updates: list[Update], started: float | None) -> None:
        await self._inbox.before_apply()
        for update in updates:
            try:
                answer = await self._taps.respond(update, started)
            except Exception:  # one bad update must not cost the others their decisions
                _log.exception("Telegram update %s could not be handled", update.event_id)
                answer = (
                    Answer(toast=_TRY_AGAIN)
                    if update.query_id
                    else Answer(say=Say(text=_TRY_AGAIN))
                )
            if not self._closed:
                await self._tell(update, answer)
                await self._stale.redraw(update)  # a duplicate card's id is learnt here

    async def _tell(self, update: Update, answer: Answer) -> None:
        """Stop the press's spinner first, then send the message; failures are logged only."""
        if update.query_id is not None and answer.toast is not None:
            fields: dict[str, Any] = {"callback_query_id": update.query_id}
            if answer.toast:
                fields["text"] = answer.toast
            await self._quietly("answerCallbackQuery", fields)
        if answer.say is not None and update.chat_id is not None:
            message: dict[str, Any] = {
                "chat_id": update.chat_id,
                "text": answer.say.text,
                "parse_mode": "HTML",
            }
            if answer.say.keyboard:
                message["reply_markup"] = {"inline_keyboard": answer.say.keyboard}
            elif answer.say.force_reply:
                message["reply_markup"] = {"force_reply": True, "input_field_placeholder": "Reason"}
            await self._quietly("sendMessage", message)

    async def _quietly(self, method: str, fields: Mapping[str, Any]) -> None:
        try:
            await self._api.call(method, fields)
        except BotApiError as error:
            if error.query_too_old:  # the press outlived Telegram's wait: decided all the same
                _log.info("Telegram press answered late (query too old); the decision stands")
                return
            _log.warning(
                "Telegram %s failed: HTTP %s: %s", method, error.status, error.description[:200]
            )
        except TRANSPORT_ERRORS as error:
            _log.warning("Telegram %s failed: %s", method, type(error).__name__)
        except aiohttp.ClientError as error:
            _log.warning("Telegram %s failed: %s", method, type(error).__name__)

    def _start(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def settled(self) -> None:
        """Wait for the decisions and replies under way (tests, and a graceful shutdown)."""
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def close(self) -> None:
        """Stop polling, let the work under way finish (bounded), close the session."""
        self._closed = True
        poller, self._poller = self._poller, None
        if poller is not None:
            poller.cancel()
            await asyncio.gather(poller, return_exceptions=True)
        try:
            await asyncio.wait_for(self.settled(), 10.0)
        except TimeoutError:
            late = list(self._tasks)
            for task in late:
                task.cancel()
            await asyncio.gather(*late, return_exceptions=True)
        await self._api.close()


def _failure_kind(error: Exception) -> str:
    """What makes two poll failures "the same" for the log: the status, or the exception type."""
    return f"HTTP {error.status}" if isinstance(error, BotApiError) else type(error).__name__


def _log_poll_failure(error: Exception, delay: float, *, again: bool) -> None:
    if again:  # the same failure as the last attempt's: said already
        _log.debug("Telegram getUpdates failed again (%s); retrying in %.0f s", error, delay)
    elif isinstance(error, BotApiError) and error.status == _CONFLICT:
        _log.error(
            "Telegram refused getUpdates (%s): a webhook is set for this bot, or another "
            "process polls it. Use mode: webhook, or delete the webhook (deleteWebhook) and "
            "run one poller; retrying with a growing pause (up to %.0f s), logged once",
            error.description[:200],
            _POLL_BACKOFF[1],
        )
    elif isinstance(error, BotApiError):
        _log.warning("Telegram getUpdates failed: %s; retrying in %.0f s", error, delay)
    else:
        _log.warning(
            "Telegram getUpdates failed: %s; retrying in %.0f s", type(error).__name__, delay
        )
