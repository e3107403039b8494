"""Slack delivery: post one approval message per outbox row, and rewrite it once decided.

Owns how tapgate talks to the Slack Web API (decision record 0004-outbox):
approvals go to the approver's DM, whose ``D…`` id (not the user id)
is what ``chat.update`` needs later; a 429's ``Retry-After`` is honoured; and
tenacity is the only retry layer (``retry_handlers=[]``), because slack_sdk's
default handler re-sends after a dropped connection and so double-posts.

``chat.postMessage`` has no idempotency key. Every message carries the outbox
key in its metadata, and a retry after an *ambiguous* failure (a timeout, a
dropped connection, a 5xx: the message may have been posted) first looks for
that key in ``conversations.history`` and returns what it finds instead of
posting again. That needs the ``im:history`` scope (``channels:history`` /
``groups:history`` for a shared channel); without it the retry posts again.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse
from tenacity import AsyncRetrying

from tapgate.channels.slack.batch_blocks import render_slack_batch
from tapgate.channels.slack.blocks import render_slack, render_slack_resolved
from tapgate.decisions.remember import Offer
from tapgate.delivery.batch_view import present_batch
from tapgate.delivery.notifier import Receipt
from tapgate.delivery.presentation import ApprovalView, present
from tapgate.delivery.retry import (
    TRANSPORT_ERRORS,
    RetryPolicy,
    delivery_retrying,
    describe_error,
    is_transient_status,
    may_have_been_delivered,
    parse_retry_after,
)
from tapgate.errors import DeliveryError, PermanentDeliveryError
from tapgate.gate.models import Delivery, Request

__all__ = ["METADATA_EVENT_TYPE", "SlackNotifier"]

_log = logging.getLogger(__name__)

METADATA_EVENT_TYPE = "tapgate_request"
"""``metadata.event_type`` of every approval message; its payload names the request and key."""

# ok:false codes for Slack's own failures: worth a retry, and the call may have happened.
_SERVER_ERRORS = frozenset(
    {"internal_error", "fatal_error", "service_unavailable", "request_timeout"}
)
_RATELIMITED = "ratelimited"
_HISTORY_LIMIT = 50
# conversations.history's ``oldest`` is Slack's clock, ``time.time()`` is ours: allow for skew.
_CLOCK_SKEW = 60.0


@dataclass(kw_only=True, slots=True)
class _Post:
    """One send's state across attempts: what to post and whether it may be posted already."""

    key: str
    request_id: str
    text: str
    blocks: list[Any]
    oldest: float
    maybe_posted: bool = False


class SlackNotifier:
    """Posts approval requests to Slack DMs (or one shared channel) and updates them.

    With ``channel_id`` every message goes to that channel instead of the
    approver's DM. ``tool_shell_args`` maps a tool name to the argument that
    holds its shell command. slack_sdk opens and closes an HTTP session per
    call (no session is given), so nothing outlives a call and ``close`` has
    nothing to release.
    """

    channel = "slack"
    edits_messages = True  # chat.update turns the buttons into "Approved by alice"

    def __init__(
        self,
        bot_token: str,
        *,
        api_base_url: str = "https://slack.com/api/",
        timeout: float = 10.0,
        channel_id: str | None = None,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        tool_shell_args: Mapping[str, str] | None = None,
        offers: Callable[[Request], Offer] | None = None,
        inbox_button: bool = False,
    ) -> None:
        self._offers = offers
        self._inbox = inbox_button  # "Open inbox" on every card (the web inbox has a URL)
        # retry_handlers=[]: tenacity retries; two layers would multiply attempts
        # and the SDK's connection-error handler would re-post blind.
        self._client = AsyncWebClient(
            token=bot_token,
            base_url=api_base_url,
            # Annotated int, but only ever handed to aiohttp.ClientTimeout(total=...).
            timeout=timeout,  # type: ignore[arg-type]
            retry_handlers=[],
        )
        self._channel_id = channel_id
        self._retry = retry or RetryPolicy()
        self._sleep = sleep
        self._tool_shell_args = dict(tool_shell_args or {})
        self._dm_channels: dict[str, str] = {}
        self._history_warned = False

    async def send(
        self, request: Request, delivery: Delivery, *, key: str, retried: bool = False
    ) -> Receipt:
        """Post ``request`` to the Slack user ``delivery.address`` (or the shared channel).

        Receipt ``ref`` is ``{"channel": "D…", "ts": "…"}`` as Slack returned them.
        A ``retried`` row looks in the conversation's history (back to the
        request's creation) before posting: an earlier attempt, in this process
        or one that died, may have posted it.
        """
        payload = render_slack(self._view(request), inbox=self._inbox)
        return await self._post(
            payload,
            delivery,
            key=key,
            kind="request",
            ident=request.id,
            since=request.created_at,
            retried=retried,
        )

    async def send_batch(
        self, requests: Sequence[Request], delivery: Delivery, *, key: str, retried: bool = False
    ) -> Receipt:
        """Post one card for a batch's calls (see ``batch_blocks``); as :meth:`send` otherwise."""
        batch = present_batch(requests, tool_shell_args=self._tool_shell_args)
        since = min(r.created_at for r in requests)
        return await self._post(
            render_slack_batch(batch, inbox=self._inbox),
            delivery,
            key=key,
            kind="batch",
            ident=batch.batch_id,
            since=since,
            retried=retried,
        )

    async def update_batch(self, requests: Sequence[Request], receipt: Receipt) -> None:
        """Rewrite the card with the batch's calls as they are now (decided ones show who)."""
        batch = present_batch(requests, tool_shell_args=self._tool_shell_args)
        await self._update(
            render_slack_batch(batch, inbox=self._inbox), receipt, subject=f"batch {batch.batch_id}"
        )

    async def _post(
        self,
        payload: dict[str, Any],
        delivery: Delivery,
        *,
        key: str,
        kind: str,
        ident: str,
        since: datetime,
        retried: bool,
    ) -> Receipt:
        """Post once, or find the earlier attempt's post (``ident``: request or batch id)."""
        post = _Post(
            key=key,
            request_id=ident,
            text=payload["text"],
            blocks=payload["blocks"],
            oldest=min(time.time(), since.timestamp()) - _CLOCK_SKEW,
            maybe_posted=retried,
        )
        label = f"Slack post of {kind} {ident} to {delivery.address}"
        ref: dict[str, str] = await self._retrying(label)(self._post_once, post, delivery.address)
        return Receipt(channel=self.channel, address=delivery.address, ref=ref)

    async def update(self, request: Request, receipt: Receipt) -> None:
        """Replace the buttons of the posted message with the outcome of ``request``.

        A pending request has no outcome yet and is left alone.
        """
        status = request.status
        if status == "pending":
            return
        payload = render_slack_resolved(
            self._view(request),
            status=status,
            by=request.resolved_by,
            at=request.resolved_at or request.expires_at,
            reason=request.resolution_reason,
            scope=request.scope,
        )
        await self._update(payload, receipt, subject=f"request {request.id}")

    async def _update(self, payload: dict[str, Any], receipt: Receipt, *, subject: str) -> None:
        channel, ts = receipt.ref.get("channel"), receipt.ref.get("ts")
        if not channel or not ts:
            raise PermanentDeliveryError(f"Slack receipt without channel and ts: {receipt.ref}")
        label = f"Slack update of {subject} in {channel}"
        await self._retrying(label)(self._update_once, channel, ts, payload)

    async def close(self) -> None:
        """Nothing to release: slack_sdk closes its per-call sessions itself."""

    def _view(self, request: Request) -> ApprovalView:
        return present(
            request,
            tool_shell_arg=self._tool_shell_args.get(request.tool),
            offer=self._offers(request) if self._offers is not None else None,
        )

    def _retrying(self, label: str) -> AsyncRetrying:
        return delivery_retrying(self._retry, sleep=self._sleep, label=label)

    async def _post_once(self, post: _Post, address: str) -> dict[str, str]:
        channel = await self._conversation(address)
        if post.maybe_posted:
            found = await self._find_posted(channel, post)
            if found is not None:
                return found
        metadata = {
            "event_type": METADATA_EVENT_TYPE,
            "event_payload": {"request_id": post.request_id, "key": post.key},
        }
        try:
            data = await _call(
                "chat.postMessage",
                self._client.chat_postMessage(
                    channel=channel,
                    text=post.text,
                    blocks=post.blocks,
                    metadata=metadata,
                    unfurl_links=False,  # no previews of links an agent chose
                    unfurl_media=False,
                ),
            )
        except DeliveryError as error:
            post.maybe_posted = post.maybe_posted or _maybe_performed(error)
            raise
        return {"channel": str(data["channel"]), "ts": str(data["ts"])}

    async def _conversation(self, address: str) -> str:
        """The ``D…`` id of ``address``'s DM (cached), or the configured shared channel."""
        if self._channel_id is not None:
            return self._channel_id
        if (cached := self._dm_channels.get(address)) is not None:
            return cached
        data = await _call("conversations.open", self._client.conversations_open(users=address))
        channel = str(data["channel"]["id"])
        self._dm_channels[address] = channel
        return channel

    async def _find_posted(self, channel: str, post: _Post) -> dict[str, str] | None:
        """The message an earlier attempt of ``post`` posted, found by its key."""
        try:
            data = await _call(
                "conversations.history",
                self._client.conversations_history(
                    channel=channel,
                    oldest=f"{post.oldest:.6f}",
                    include_all_metadata=True,
                    limit=_HISTORY_LIMIT,
                ),
            )
        except DeliveryError as error:
            if error.retryable:
                raise
            self._warn_history_unavailable(error)
            return None
        for message in data.get("messages") or []:
            metadata = message.get("metadata") or {}
            payload = metadata.get("event_payload") or {}
            if metadata.get("event_type") == METADATA_EVENT_TYPE and payload.get("key") == post.key:
                _log.info("Slack message of request %s was posted already", post.request_id)
                return {"channel": channel, "ts": str(message["ts"])}
        return None

    def _warn_history_unavailable(self, error: DeliveryError) -> None:
        if not self._history_warned:
            self._history_warned = True
            _log.warning(
                "cannot search Slack history (%s): a retry after a lost response may post "
                "twice; grant the bot im:history (channels:history for a shared channel)",
                error,
            )

    async def _update_once(self, channel: str, ts: str, payload: dict[str, Any]) -> None:
        # chat.update is idempotent: repeating it after an ambiguous failure is harmless.
        await _call(
            "chat.update",
            self._client.chat_update(
                channel=channel, ts=ts, text=payload["text"], blocks=payload["blocks"]
            ),
        )


async def _call(method: str, call: Awaitable[AsyncSlackResponse]) -> dict[str, Any]:
    """Await one Web API call; its data as a plain dict, or a translated ``DeliveryError``."""
    try:
        response = await call
    except SlackApiError as error:
        raise _api_error(method, error) from error
    except TRANSPORT_ERRORS as error:
        raise DeliveryError(f"Slack {method} failed: {describe_error(error)}") from error
    data = response.data
    return dict(data) if isinstance(data, dict) else {}


def _api_error(method: str, error: SlackApiError) -> DeliveryError:
    response = error.response
    status: int = response.status_code
    data = response.data if isinstance(response.data, dict) else {}
    code = str(data.get("error") or "no error code")
    if data.get("needed"):
        code += f" (needs {data['needed']})"
    text = f"Slack {method} failed: HTTP {status}: {code}"
    if status == 429 or code == _RATELIMITED:
        retry_after = parse_retry_after(response.headers.get("Retry-After"))
        return DeliveryError(text, status=status, retry_after=retry_after)
    if is_transient_status(status) or code in _SERVER_ERRORS:
        return DeliveryError(text, status=status)
    return PermanentDeliveryError(text, status=status)


def _maybe_performed(error: DeliveryError) -> bool:
    """True when the failed call may have taken effect (only its answer was lost)."""
    cause = error.__cause__
    if isinstance(cause, SlackApiError):
        data = cause.response.data
        code = data.get("error") if isinstance(data, dict) else None
        return (error.status or 0) >= 500 or code in _SERVER_ERRORS
    return cause is not None and may_have_been_delivered(cause)
