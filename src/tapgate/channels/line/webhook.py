"""LINE's webhook: verified taps and typed answers become decisions, and each gets a reply.

Owns ``POST /webhooks/line`` from the raw bytes to the reply in the chat (sent after the 200)::

    raw body ──X-Line-Signature──► 401 | JSON ──shape──► 400 | events
    postbacks, typed answers ──inbox.record (one INSERT)──► 503 | 200, then applied:
    event ──webhookEventId seen?──► skip | ``_line_taps``: a tap, a typed reason or answer,
                                           a command, the ``id`` ──► the reply, sent from here

What a tap *means* (who may decide, the compare-and-set, the sentences) is
``tapgate.decisions.taps``; this module only speaks LINE, and what one event asks
for (LINE's two-step "Deny…" and Reply among it) is ``_line_taps``. The
payload is read by line-bot-sdk's ``WebhookParser`` (fenced in
``_line_events``) after verification.

Record before acknowledging (decision 0017-record-before-acknowledge): the events that may
decide (a postback or a text message in a 1:1 chat) are stored in the inbox
(:mod:`tapgate.decisions.webhook_inbox`) before the 200 and applied after it; the
decision's transaction remembers the ``webhookEventId`` and deletes the
stored row, so a replay after a crash acts once. The ``id`` command and a
follow decide nothing and are answered as before, unstored.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
from aiohttp import web

from tapgate.channels.contract import Handler
from tapgate.channels.line.commands import LineAnswer
from tapgate.channels.line.events import Event, EventReader, Malformed, decode, encode
from tapgate.channels.line.reply import LineReplier, ReplyFailed
from tapgate.channels.line.signature import verify_signature
from tapgate.channels.line.taps import LineTaps
from tapgate.channels.tap_log import TapLog
from tapgate.decisions.chat_commands import LinkMaker
from tapgate.decisions.typed_reasons import Reasons
from tapgate.decisions.webhook_inbox import Inbox, InboxItem
from tapgate.gate.gate import Gate

__all__ = ["LineWebhook", "WebhookResult", "verify_signature"]

_log = logging.getLogger(__name__)

_SIGNATURE_HEADER = "X-Line-Signature"
_TRY_AGAIN = "tapgate could not record that just now; please tap the button again."
_SEND_AGAIN = "tapgate could not record that just now; please send your answer again."


@dataclass(frozen=True, kw_only=True, slots=True)
class WebhookResult:
    """The answer for LINE: an HTTP status and a small JSON body, free of any framework."""

    status: int
    body: Mapping[str, object]


_OK = WebhookResult(status=200, body={"ok": True})
_OK_BODY = b'{"ok": true}'


class LineWebhook:
    """Receives LINE webhook calls for one channel and resolves taps through ``gate``.

    ``on_reject`` hears why a call was refused (``"signature"``,
    ``"payload"``); ``on_decision`` hears the seconds from a verified call to
    a recorded decision; ``tap_log`` is the level of a decided tap's one log
    line (``None``: none; ``channels.tap_log``, see ``_tap_log``). The
    client that replies is created on the first reply, inside the running
    loop (its aiohttp session binds to the loop), and closed by
    :meth:`close`; replies skip line-bot-sdk (see ``_line_reply``).
    ``inbox`` is the app's (one is made if none is given); its replays of
    stored events come back through :meth:`_replay`. ``reason_window`` is how
    long a typed reason is waited for after "Deny…" (``channels.line.reason_window``).
    ``links`` mints the web inbox's sign-in links (``inbox``, "Open inbox"; ``None``:
    the server has no public URL).
    """

    def __init__(
        self,
        *,
        gate: Gate,
        channel_secret: str,
        access_token: str,
        api_base_url: str = "https://api.line.me",
        timeout: float = 10.0,
        on_reject: Callable[[str], None] | None = None,
        on_decision: Callable[[float], None] | None = None,
        inbox: Inbox | None = None,
        reason_window: float = 300.0,
        tap_log: int | None = logging.INFO,
        links: LinkMaker | None = None,
    ) -> None:
        if not channel_secret:
            # HMAC with an empty key is a signature anyone can compute.
            raise ValueError("the LINE channel secret must not be empty")
        self._gate = gate
        self._secret = channel_secret.encode("utf-8")
        self._events = EventReader(channel_secret)
        self._api_base_url = api_base_url
        self._access_token = access_token
        self._timeout = timeout
        self._on_reject = on_reject
        self._tap_log = TapLog(_log, "LINE", level=tap_log, on_decision=on_decision)
        self._client: LineReplier | None = None
        # Decisions and replies are made after the 200, in tasks owned here:
        # LINE wants a fast answer, and what decides is stored before it.
        self._tasks: set[asyncio.Task[None]] = set()
        self._closed = False
        self._inbox = inbox or Inbox(gate)
        self._inbox.register("line", self._replay)
        reasons = Reasons(gate, window=reason_window)
        self._taps = LineTaps(gate, reasons=reasons, tap_log=self._tap_log, links=links)

    async def handle(self, headers: Mapping[str, str], body: bytes) -> WebhookResult:
        """Verify, parse, store what may decide, answer; never raises for bad input.

        Returns 401 for a missing or wrong signature and 400 for a signed body
        that is not a webhook payload, both before anything changes; 503 when
        the events that may decide could not be stored (LINE redelivers them,
        same ids, when redelivery is on); otherwise 200 once they are stored
        and the others handled. The stored ones are applied after the 200, in
        order, in a task owned here (:meth:`settled` waits for it); a failed
        event is logged and replied to, and stays stored for a replay.
        """
        signature = _header(headers, _SIGNATURE_HEADER)
        if not verify_signature(self._secret, body, signature):
            _log.warning("LINE webhook refused: missing or invalid signature")
            return self._reject("signature", 401, "invalid signature")
        started = time.perf_counter()
        try:
            events = self._events.read(body, signature or "")
        except Malformed as error:
            _log.warning("LINE webhook refused: signed but malformed payload (%s)", error)
            return self._reject("payload", 400, "malformed payload")
        acting = [event for event in events if event.actionable or self._may_decide(event)]
        stored = [event for event in acting if self._may_decide(event)]
        if stored:
            self._taps.look_ahead(stored)  # read beside the record, not after the 200
            try:
                await self._inbox.record("line", [(e.event_id, encode(e)) for e in stored])
            except Exception:  # no 200: nothing was stored, nothing must be lost
                self._taps.drop(stored)
                _log.exception("LINE events could not be stored; answered 503")
                return WebhookResult(status=503, body={"error": "try again"})
            self._start(self._apply(stored, started))
        for event in acting:
            if not self._may_decide(event):
                reply = await self._handle_event(event, started)
                if reply is not None:  # after the 200, not before it
                    self._start(self._reply(*reply))
        return _OK

    def _replay(self, item: InboxItem) -> None:
        """A stored event that was acknowledged and never applied: apply it now."""
        event = decode(item.payload)
        if event is None:
            _log.error("stored LINE event %s cannot be read; left alone", item.event_id)
            return
        self._start(self._apply([event], None))

    async def _apply(self, events: list[Event], started: float | None) -> None:
        """Decide ``events`` in order; the last one's reply is sent from this task itself.

        (One task less per tap: a body almost always carries one tap. The
        replies of the others go out in tasks of their own, so that no
        decision waits for the reply to the one before it.)
        """
        try:
            await self._inbox.before_apply()
            last = len(events) - 1
            for index, event in enumerate(events):
                reply = await self._handle_event(event, started)
                if reply is None:
                    continue
                if index == last:
                    # The decision set the parked long-polls' futures: let them
                    # answer (and consume) before the reply takes the loop.
                    await asyncio.sleep(0)
                    await self._reply(*reply)
                else:
                    self._start(self._reply(*reply))
        finally:
            self._taps.drop(events)

    def _start(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def __call__(self, request: web.Request) -> web.Response:
        """The aiohttp handler: the raw bytes in, :meth:`handle`'s answer out."""
        try:
            body = await request.read()
        except web.RequestPayloadError:  # in tapgate's app, bot/bodies.py has read it already
            _log.warning("LINE webhook refused: unreadable body")
            result = self._reject("payload", 400, "unreadable body")
        else:
            result = await self.handle(request.headers, body)
        if result is _OK:  # every tap's answer: encoded once
            return web.Response(body=_OK_BODY, content_type="application/json")
        return web.json_response(dict(result.body), status=result.status)

    async def settled(self) -> None:
        """Wait for the decisions and replies under way (tests, and a graceful shutdown)."""
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def handler(self, route: str) -> Handler:
        """The one route's handler (``webhook``): this object, called with the request."""
        del route
        return self.__call__

    async def close(self) -> None:
        """Let replies under way finish (bounded), then close the reply session."""
        self._closed = True
        try:
            await asyncio.wait_for(self.settled(), self._timeout)
        except TimeoutError:
            late = list(self._tasks)
            for task in late:
                task.cancel()
            await asyncio.gather(*late, return_exceptions=True)  # off the session before it closes
        client, self._client = self._client, None
        if client is not None:
            await client.close()

    def _reject(self, reason: str, status: int, error: str) -> WebhookResult:
        if self._on_reject is not None:
            self._on_reject(reason)
        return WebhookResult(status=status, body={"error": error})

    async def _handle_event(
        self, event: Event, started: float | None
    ) -> tuple[str, LineAnswer] | None:
        """Act once per event id; the reply to send; one event's failure never touches the others.

        A tap's or an answer's event id is remembered in the same transaction
        as its decision (see ``core.taps.tap``): a redelivery racing the
        original acts once, and a crash cannot leave an event "seen" but
        undecided. Events that decide nothing (``id``, follow, a refusal made
        before the gate is asked) are claimed on their own before the reply.
        """
        try:
            if not self._may_decide(event) and not await self._taps.claim(event):
                self._skipped(event)
                return None
            message = await self._taps.respond(event, started)
        except Exception:  # one bad event must not cost the others their decisions
            _log.exception("LINE event %s could not be handled", event.event_id)
            message = _SEND_AGAIN if event.text is not None else _TRY_AGAIN
        if message is None:
            self._skipped(event)
            return None
        if event.reply_token is None or self._closed:
            return None
        return event.reply_token, message

    @staticmethod
    def _may_decide(event: Event) -> bool:
        """A postback or a text in a 1:1 chat (an answer, or a reason): it may decide."""
        one_to_one = event.source_type == "user" and event.user_id is not None
        typed = event.text is not None and not event.is_id_command
        return one_to_one and (event.kind == "postback" or typed)

    @staticmethod
    def _skipped(event: Event) -> None:
        redelivered = " (redelivery)" if event.redelivery else ""
        _log.info("LINE event %s already handled%s; skipped", event.event_id, redelivered)

    async def _reply(self, reply_token: str, answer: LineAnswer) -> None:
        """Reply with ``answer`` (a text, or message objects); a failure is logged, never raised."""
        try:
            if isinstance(answer, str):
                await self._replier().reply(reply_token, answer)
            else:
                await self._replier().reply_messages(reply_token, answer)
        except ReplyFailed as error:  # e.g. an expired reply token (about a minute)
            _log.warning("LINE reply failed: HTTP %s: %s", error.status, _excerpt(error.body))
        except (aiohttp.ClientError, TimeoutError, OSError) as error:
            _log.warning("LINE reply failed: %s", type(error).__name__)
        except Exception:  # the decision is recorded; a reply must not undo the 200
            _log.exception("LINE reply failed unexpectedly")

    def _replier(self) -> LineReplier:
        if self._client is None:
            self._client = LineReplier(
                api_base_url=self._api_base_url,
                access_token=self._access_token,
                timeout=self._timeout,
            )
        return self._client


def _header(headers: Mapping[str, str], name: str) -> str | None:
    """``headers[name]``, case-insensitively for plain dicts too."""
    value = headers.get(name)
    if value is not None:
        return value
    wanted = name.lower()
    return next((v for k, v in headers.items() if k.lower() == wanted), None)


def _excerpt(body: object) -> str:
    if isinstance(body, bytes | bytearray):
        body = body.decode("utf-8", "replace")
    return str(body)[:200] if body is not None else "no body"
