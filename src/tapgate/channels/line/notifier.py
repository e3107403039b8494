"""LINE delivery: push one approval Flex message to one user, exactly once.

Owns how tapgate talks to LINE's push endpoint (decision record
0004-outbox): the outbox key becomes the ``X-Line-Retry-Key`` of every attempt,
so a retry after a lost answer is answered 409 ("already accepted") instead of
pushing twice; every call carries an explicit timeout (the SDK's default is
300 s); and LINE's two kinds of 429 are told apart, because a rate limit clears
in seconds while the monthly quota never does before the month ends.

LINE messages cannot be edited, so :meth:`LineNotifier.update` does nothing:
a decision is confirmed by the webhook's reply to the tap.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from linebot.v3.messaging import (
    AsyncApiClient,
    AsyncMessagingApi,
    Configuration,
    PushMessageRequest,
)
from linebot.v3.messaging.exceptions import ApiException
from pydantic.v1 import PrivateAttr

from tapgate.channels.line.batch_flex import render_line_batch
from tapgate.channels.line.flex import render_line
from tapgate.decisions.remember import Offer
from tapgate.delivery.batch_view import present_batch
from tapgate.delivery.notifier import Receipt
from tapgate.delivery.presentation import present
from tapgate.delivery.retry import (
    TRANSPORT_ERRORS,
    RetryPolicy,
    delivery_retrying,
    describe_error,
    is_transient_status,
    parse_retry_after,
)
from tapgate.errors import DeliveryError, PermanentDeliveryError
from tapgate.gate.models import Delivery, Request

__all__ = ["LineNotifier"]

_log = logging.getLogger(__name__)

_ALREADY_ACCEPTED = 409
_TOO_MANY_REQUESTS = 429
_MONTHLY_LIMIT = "monthly limit"  # "You have reached your monthly limit."
# Outbox keys that are not UUIDs (LINE insists on one) map to a stable UUID.
_RETRY_KEY_NAMESPACE = uuid.UUID("0c5e7b2a-6f43-4d1e-9a3b-7d2f1c8e5a40")


class LineNotifier:
    """Pushes approval requests to LINE users through the Messaging API.

    ``tool_shell_args`` maps a tool name to the argument that holds its shell
    command, so the message shows that command as a command. The SDK client
    is created on the first send, inside the running event loop (its aiohttp
    session binds to the loop), and released by :meth:`close`.
    """

    channel = "line"
    edits_messages = False  # LINE cannot edit a sent message: no update pass for it

    def __init__(
        self,
        access_token: str,
        *,
        api_base_url: str = "https://api.line.me",
        timeout: float = 10.0,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        tool_shell_args: Mapping[str, str] | None = None,
        offers: Callable[[Request], Offer] | None = None,
        inbox_button: bool = False,
    ) -> None:
        self._offers = offers
        self._inbox = inbox_button  # "Open inbox" on every card (the web inbox has a URL)
        self._configuration = Configuration(
            host=api_base_url.rstrip("/"), access_token=access_token
        )
        self._timeout = timeout
        self._retry = retry or RetryPolicy()
        self._sleep = sleep
        self._tool_shell_args = dict(tool_shell_args or {})
        self._client: AsyncApiClient | None = None
        self._quota_reported = False

    async def send(
        self, request: Request, delivery: Delivery, *, key: str, retried: bool = False
    ) -> Receipt:
        """Push ``request`` to the LINE user ``delivery.address``.

        Raises :class:`PermanentDeliveryError` for a rejected message, bad
        credentials or an exhausted monthly quota, and a retryable
        :class:`DeliveryError` when transient failures outlast the retry policy.
        """
        view = present(
            request,
            tool_shell_arg=self._tool_shell_args.get(request.tool),
            offer=self._offers(request) if self._offers is not None else None,
        )
        body = _push_request(delivery.address, [render_line(view, inbox=self._inbox)])
        return await self._deliver(body, delivery, key, f"request {request.id}")

    async def send_batch(
        self, requests: Sequence[Request], delivery: Delivery, *, key: str, retried: bool = False
    ) -> Receipt:
        """Push one Flex card (a bubble, or a carousel) for a batch's calls; see ``batch_flex``."""
        batch = present_batch(requests, tool_shell_args=self._tool_shell_args)
        try:
            messages = render_line_batch(batch, inbox=self._inbox)
        except ValueError as error:  # cannot happen within MAX_CALLS; never retry it
            raise PermanentDeliveryError(str(error)) from error
        # Checking a 20-call carousel against the SDK's models is ~10 ms of pure
        # Python: on a worker thread the event loop keeps serving taps, the API
        # and the other channels' cards meanwhile (it blocked the Slack card of
        # the same batch: docs/benchmarks.md). A single message's check is ~1 ms.
        body = await asyncio.to_thread(_push_request, delivery.address, messages)
        return await self._deliver(body, delivery, key, f"batch {batch.batch_id}")

    async def _deliver(
        self, body: PushMessageRequest, delivery: Delivery, key: str, subject: str
    ) -> Receipt:
        """One push of ``body``'s messages (one retry key for all: LINE accepts them together)."""
        label = f"LINE push of {subject} to {delivery.address}"
        retrying = delivery_retrying(self._retry, sleep=self._sleep, label=label)
        message_id: str | None = await retrying(self._push, body, _retry_key(key))
        ref = {"message_id": message_id} if message_id else {}
        return Receipt(channel=self.channel, address=delivery.address, ref=ref)

    async def update(self, request: Request, receipt: Receipt) -> None:
        """Nothing to do: LINE cannot edit a sent message."""

    async def update_batch(self, requests: Sequence[Request], receipt: Receipt) -> None:
        """Nothing to do: LINE cannot edit a sent message (taps are answered by reply)."""

    async def close(self) -> None:
        """Close the SDK client's HTTP session; a later send opens a new one."""
        client, self._client = self._client, None
        if client is not None:
            await client.close()

    async def _push(self, body: PushMessageRequest, retry_key: str) -> str | None:
        """One attempt; returns the message id, translating every failure."""
        api = AsyncMessagingApi(self._api_client())
        try:
            response = await api.push_message(
                body, x_line_retry_key=retry_key, _request_timeout=self._timeout
            )
        except ApiException as error:
            if error.status == _ALREADY_ACCEPTED:
                return _first_message_id(_json_body(error.body))
            raise self._api_error(error) from error
        except TRANSPORT_ERRORS as error:
            raise DeliveryError(f"LINE push failed: {describe_error(error)}") from error
        return _first_message_id(response.to_dict())

    def _api_client(self) -> AsyncApiClient:
        if self._client is None:
            self._client = AsyncApiClient(self._configuration)
        return self._client

    def _api_error(self, error: ApiException) -> DeliveryError:
        status = error.status if isinstance(error.status, int) else None
        message = _platform_message(_json_body(error.body)) or str(error.reason or "no message")
        text = f"LINE push failed: HTTP {status}: {message}"
        if status == _TOO_MANY_REQUESTS and _MONTHLY_LIMIT in message.lower():
            self._report_quota(message)
            return PermanentDeliveryError(text, status=status)
        if is_transient_status(status):
            headers = error.headers or {}
            retry_after = parse_retry_after(headers.get("Retry-After"))
            return DeliveryError(text, status=status, retry_after=retry_after)
        return PermanentDeliveryError(text, status=status)

    def _report_quota(self, message: str) -> None:
        # Once per notifier: every queued message would repeat it until the month ends.
        if not self._quota_reported:
            self._quota_reported = True
            _log.error(
                "LINE refused a push: %s No LINE message will be delivered until the "
                "quota resets or the plan is upgraded; approvers must use another channel.",
                message,
            )


class _CheckedPush(PushMessageRequest):  # type: ignore[misc]  # the SDK's models are untyped
    """A push request checked by the SDK's models, sent as the messages it was checked from.

    The SDK serialises a request with ``to_dict`` at every level, each one
    re-running pydantic's ``dict()`` over its whole subtree: 15 ms of
    event-loop time for a 20-call batch carousel, more than rendering and
    checking it (docs/benchmarks.md). Our Flex messages are exactly what
    that round trip gives back (``tests/delivery/test_render.py`` and
    ``test_batch_render.py`` assert it for every card), so the checked
    request is sent as they are.
    """

    _sent: dict[str, Any] = PrivateAttr(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """What is posted: the checked fields, with the messages as rendered."""
        return self._sent


def _push_request(address: str, messages: list[dict[str, Any]]) -> PushMessageRequest:
    try:
        checked = PushMessageRequest.from_dict({"to": address, "messages": messages})
    except ValueError as error:  # pydantic v1's ValidationError is a ValueError
        raise PermanentDeliveryError(f"LINE message could not be built: {error}") from error
    push = _CheckedPush.construct(_fields_set=checked.__fields_set__, **checked.__dict__)
    sent = checked.dict(by_alias=True, exclude={"messages"}, exclude_none=True)
    push._sent = {**sent, "messages": messages}
    return push


def _retry_key(key: str) -> str:
    """``key`` if it is a UUID, else a UUID derived from it (stable across attempts)."""
    try:
        return str(uuid.UUID(key))
    except ValueError:
        return str(uuid.uuid5(_RETRY_KEY_NAMESPACE, key))


def _json_body(body: object) -> Any:
    if isinstance(body, bytes | bytearray):
        body = body.decode("utf-8", "replace")
    if not isinstance(body, str):
        return None
    try:
        return json.loads(body)
    except ValueError:
        return None


def _platform_message(body: Any) -> str:
    """LINE's ``message``, with each ``details`` entry ("property: message") appended."""
    if not isinstance(body, dict):
        return ""
    message = str(body.get("message") or "")
    details = body.get("details")
    if isinstance(details, list) and details:
        parts = [
            f"{d.get('property', '?')}: {d.get('message', '?')}"
            for d in details
            if isinstance(d, dict)
        ]
        message += f" ({'; '.join(parts)})"
    return message


def _first_message_id(body: Any) -> str | None:
    """The id of the first sent message in a 200 or 409 body, if LINE gave one."""
    if not isinstance(body, dict):
        return None
    sent = body.get("sentMessages")
    if isinstance(sent, list) and sent and isinstance(sent[0], dict) and sent[0].get("id"):
        return str(sent[0]["id"])
    return None
