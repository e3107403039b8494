"""LINE's webhook: verified taps become decisions, and each tap gets a reply.

Owns ``POST /webhooks/line`` from the raw bytes to the reply in the chat (sent after the 200)::

    raw body ──X-Line-Signature──► 401 | JSON ──shape──► 400 | events
    event ──webhookEventId seen?──► skip | postback ──core.taps.tap──► reply
                                         | "id" text / follow ──► reply with the user id

What a tap *means* (who may decide, the compare-and-set, the sentences) is
``tapgate.core.taps``; this module only speaks LINE. The payload is read
after verification with a small parser of our own rather than the SDK's
``WebhookParser``: that parser verifies again over re-encoded text, quietly
turns an event it cannot read into an ``UnknownEvent`` and hands back
untyped pydantic-v1 models. We need a handful of fields of LINE's documented shape,
and a signed body that does not have them is answered 400, never 500.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
from aiohttp import web
from linebot.v3.messaging import (
    AsyncApiClient,
    AsyncMessagingApi,
    Configuration,
    ReplyMessageRequest,
    TextMessage,
)
from linebot.v3.messaging.exceptions import ApiException

from tapgate.core.actions import parse_postback_data
from tapgate.core.gate import Gate
from tapgate.core.taps import tap
from tapgate.webhooks._signature import verify_signature

__all__ = ["LineWebhook", "WebhookResult", "verify_signature"]

_log = logging.getLogger(__name__)

_SIGNATURE_HEADER = "X-Line-Signature"
_NO_LONGER_VALID = "This button is no longer valid."
_ONE_TO_ONE_ONLY = (
    "tapgate works in a 1:1 chat only: open a chat with this bot "
    "to approve requests or to see your user id."
)
_TRY_AGAIN = "tapgate could not record that just now; please tap the button again."
_TEXT_LIMIT = 5000  # LINE's limit for one text message
_ID_COMMAND = "id"


@dataclass(frozen=True, kw_only=True, slots=True)
class WebhookResult:
    """The answer for LINE: an HTTP status and a small JSON body, free of any framework."""

    status: int
    body: Mapping[str, object]


class _Malformed(ValueError):
    """A signed body that is not a LINE webhook payload."""


@dataclass(frozen=True, kw_only=True, slots=True)
class _Event:
    """The fields of one LINE event that tapgate acts on, read at the boundary."""

    kind: str
    event_id: str
    redelivery: bool
    reply_token: str | None
    source_type: str | None
    user_id: str | None
    data: str | None = None
    text: str | None = None

    @property
    def actionable(self) -> bool:
        """A tap, a new follower, or the ``id`` command; every other event is ignored."""
        if self.kind in ("postback", "follow"):
            return True
        return self.text is not None and self.text.strip().casefold() == _ID_COMMAND


class LineWebhook:
    """Receives LINE webhook calls for one channel and resolves taps through ``gate``.

    ``on_reject`` hears why a call was refused (``"signature"``,
    ``"payload"``); ``on_decision`` hears the seconds from a verified call to
    a recorded decision. The SDK client that replies is created on the first
    reply, inside the running loop (its aiohttp session binds to the loop),
    and closed by :meth:`close`.
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
    ) -> None:
        if not channel_secret:
            # HMAC with an empty key is a signature anyone can compute.
            raise ValueError("the LINE channel secret must not be empty")
        self._gate = gate
        self._secret = channel_secret.encode("utf-8")
        self._configuration = Configuration(
            host=api_base_url.rstrip("/"), access_token=access_token
        )
        self._timeout = timeout
        self._on_reject = on_reject
        self._on_decision = on_decision
        self._client: AsyncApiClient | None = None
        # Replies go out after the 200: LINE wants a fast answer, and the
        # decision is recorded before the reply is even built.
        self._replies: set[asyncio.Task[None]] = set()

    async def handle(self, headers: Mapping[str, str], body: bytes) -> WebhookResult:
        """Verify, parse and act on one webhook call; never raises for bad input.

        Returns 401 for a missing or wrong signature and 400 for a signed body
        that is not a webhook payload, both before anything changes; otherwise
        200 once every event is handled (a failed reply or event is logged:
        the decision is already recorded, and LINE gains nothing from a retry).
        """
        if not verify_signature(self._secret, body, _header(headers, _SIGNATURE_HEADER)):
            _log.warning("LINE webhook refused: missing or invalid signature")
            return self._reject("signature", 401, "invalid signature")
        started = time.perf_counter()
        try:
            events = _parse(body)
        except _Malformed as error:
            _log.warning("LINE webhook refused: signed but malformed payload (%s)", error)
            return self._reject("payload", 400, "malformed payload")
        for event in events:
            if event.actionable:
                await self._handle_event(event, started)
        return WebhookResult(status=200, body={"ok": True})

    async def __call__(self, request: web.Request) -> web.Response:
        """The aiohttp handler: the raw bytes in, :meth:`handle`'s answer out."""
        result = await self.handle(request.headers, await request.read())
        return web.json_response(dict(result.body), status=result.status)

    async def settled(self) -> None:
        """Wait for the replies already under way (tests, and a graceful shutdown)."""
        while self._replies:
            await asyncio.gather(*self._replies, return_exceptions=True)

    async def close(self) -> None:
        """Let replies under way finish (bounded), then close the SDK client's session."""
        try:
            await asyncio.wait_for(self.settled(), self._timeout)
        except TimeoutError:
            for task in self._replies:
                task.cancel()
        client, self._client = self._client, None
        if client is not None:
            await client.close()

    def _reject(self, reason: str, status: int, error: str) -> WebhookResult:
        if self._on_reject is not None:
            self._on_reject(reason)
        return WebhookResult(status=status, body={"error": error})

    async def _handle_event(self, event: _Event, started: float) -> None:
        """Act once per event id, reply; one event's failure never touches the others.

        A tap's event id is remembered in the same transaction as its decision
        (see ``core.taps.tap``): a redelivery racing the original acts once,
        and a crash cannot leave an event "seen" but undecided. Other events
        (``id``, follow) are claimed on their own before the reply.
        """
        try:
            if event.kind != "postback" or not self._is_tap(event):
                now = self._gate.clock.now()
                if not await self._gate.store.remember_event("line", event.event_id, now):
                    self._skipped(event)
                    return
            message = await self._respond(event, started)
        except Exception:  # one bad event must not cost the others their decisions
            _log.exception("LINE event %s could not be handled", event.event_id)
            message = _TRY_AGAIN
        if message is None:
            self._skipped(event)
            return
        if event.reply_token is not None:
            task = asyncio.create_task(self._reply(event.reply_token, message))
            self._replies.add(task)
            task.add_done_callback(self._replies.discard)

    @staticmethod
    def _is_tap(event: _Event) -> bool:
        return event.source_type == "user" and event.user_id is not None

    @staticmethod
    def _skipped(event: _Event) -> None:
        redelivered = " (redelivery)" if event.redelivery else ""
        _log.info("LINE event %s already handled%s; skipped", event.event_id, redelivered)

    async def _respond(self, event: _Event, started: float) -> str | None:
        # In a group or room LINE does not promise the tapper's userId, and a
        # decision must be attributable to one approver.
        if event.source_type != "user" or event.user_id is None:
            return _ONE_TO_ONE_ONLY
        if event.kind != "postback":
            return f"Your LINE user id is {event.user_id}; add it to tapgate.yaml under approvers."
        parsed = parse_postback_data(event.data)
        if parsed is None:
            if not await self._gate.store.remember_event(
                "line", event.event_id, self._gate.clock.now()
            ):
                return None
            _log.info("LINE postback %s carries unknown data; refused", event.event_id)
            return _NO_LONGER_VALID
        action, request_id = parsed
        outcome = await tap(
            self._gate,
            channel="line",
            user_id=event.user_id,
            action=action,
            request_id=request_id,
            event=event.event_id,
        )
        if outcome.kind == "duplicate":
            return None
        _log.info(
            "LINE tap %s by %s on request %s: %s",
            action,
            outcome.approver or event.user_id,
            request_id,
            outcome.kind,
        )
        if outcome.applied and self._on_decision is not None:
            self._on_decision(time.perf_counter() - started)
        return outcome.message

    async def _reply(self, reply_token: str, text: str) -> None:
        """Reply with ``text``; a failure is logged, never raised."""
        try:
            body = ReplyMessageRequest(
                reply_token=reply_token, messages=[TextMessage(text=text[:_TEXT_LIMIT])]
            )
            api = AsyncMessagingApi(self._api_client())
            await api.reply_message(body, _request_timeout=self._timeout)
        except ApiException as error:  # e.g. an expired reply token (about a minute)
            _log.warning("LINE reply failed: HTTP %s: %s", error.status, _excerpt(error.body))
        except (aiohttp.ClientError, TimeoutError, OSError) as error:
            _log.warning("LINE reply failed: %s", type(error).__name__)
        except Exception:  # the decision is recorded; a reply must not undo the 200
            _log.exception("LINE reply failed unexpectedly")

    def _api_client(self) -> AsyncApiClient:
        if self._client is None:
            self._client = AsyncApiClient(self._configuration)
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


def _parse(body: bytes) -> list[_Event]:
    """The events of a verified body; raises :class:`_Malformed` for anything else."""
    try:
        payload = json.loads(body)
    except (ValueError, RecursionError) as error:  # JSON or UTF-8 errors; absurd nesting
        raise _Malformed("not JSON") from error
    events = payload.get("events") if isinstance(payload, dict) else None
    if not isinstance(events, list):
        raise _Malformed("no events list")
    return [_event(item, index) for index, item in enumerate(events)]


def _event(item: object, index: int) -> _Event:
    where = f"events[{index}]"
    if not isinstance(item, dict):
        raise _Malformed(f"{where}: expected an object")
    kind = _required_text(item, "type", where)
    source = _object(item, "source", where) or {}
    context = _object(item, "deliveryContext", where) or {}
    redelivery = context.get("isRedelivery", False)
    if not isinstance(redelivery, bool):
        raise _Malformed(f"{where}.deliveryContext.isRedelivery: expected true or false")
    return _Event(
        kind=kind,
        event_id=_required_text(item, "webhookEventId", where),
        redelivery=redelivery,
        reply_token=_text(item, "replyToken", where),
        source_type=_text(source, "type", f"{where}.source"),
        user_id=_text(source, "userId", f"{where}.source"),
        data=_postback_data(item, where) if kind == "postback" else None,
        text=_message_text(item, where) if kind == "message" else None,
    )


def _postback_data(item: Mapping[str, Any], where: str) -> str:
    data = _object(item, "postback", where, required=True) or {}
    value = data.get("data")
    if not isinstance(value, str):
        raise _Malformed(f"{where}.postback.data: expected a string")
    return value


def _message_text(item: Mapping[str, Any], where: str) -> str | None:
    """The text of a text message; ``None`` for stickers, images and the like."""
    message = _object(item, "message", where, required=True) or {}
    if message.get("type") != "text":
        return None
    text = message.get("text")
    if not isinstance(text, str):
        raise _Malformed(f"{where}.message.text: expected a string")
    return text


def _text(obj: Mapping[str, Any], key: str, where: str) -> str | None:
    """A non-empty string field, or ``None`` when it is absent or null."""
    value = obj.get(key)
    return None if value is None else _required_text(obj, key, where)


def _required_text(obj: Mapping[str, Any], key: str, where: str) -> str:
    value = obj.get(key)
    if not isinstance(value, str) or not value:
        raise _Malformed(f"{where}.{key}: expected a non-empty string")
    return value


def _object(
    obj: Mapping[str, Any], key: str, where: str, *, required: bool = False
) -> dict[str, Any] | None:
    value = obj.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, dict):
        raise _Malformed(f"{where}.{key}: expected an object")
    return value
