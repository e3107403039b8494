"""Discord delivery: a card in each approver's DM with the bot, edited once decided.

A bot reaches a user through a DM channel (``POST /users/@me/channels``,
cached per user: Discord returns the same channel every time), then posts
there (``POST /channels/{id}/messages``) and edits that message after the
decision (``PATCH /channels/{id}/messages/{id}``); the dispatcher keeps the
receipt ``{"channel_id", "message_id"}``.

A retried post carries the outbox key as its ``nonce`` with
``enforce_nonce``: Discord then returns the message an earlier attempt
created (within a few minutes) instead of posting a second card, which is
what a timeout after a delivered post needs.

Failures become :class:`~tapgate.errors.DeliveryError` in one place
(:func:`_delivery_error`): 429 and 5xx are retried by the one retry policy
(``Retry-After`` from Discord's float ``retry_after``); 50007 ("Cannot send
messages to this user") and 50278 (no mutual server) are permanent and say
what the approver must do; 401/403/404 are never retried.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from tapgate.channels.discord.batch_cards import render_discord_batch
from tapgate.channels.discord.cards import edit_offer, render_discord, render_discord_resolved
from tapgate.channels.discord.rest import DiscordApiError, DiscordRest
from tapgate.decisions.remember import Offer
from tapgate.delivery.batch_view import present_batch
from tapgate.delivery.notifier import Receipt
from tapgate.delivery.presentation import ApprovalView, present
from tapgate.delivery.retry import (
    TRANSPORT_ERRORS,
    RetryPolicy,
    delivery_retrying,
    describe_error,
)
from tapgate.errors import DeliveryError, PermanentDeliveryError
from tapgate.gate.models import Delivery, Request

__all__ = ["CANNOT_DM", "NO_MUTUAL_GUILDS", "DiscordNotifier", "delivery_error", "resolved_body"]

CANNOT_DM = 50007
NO_MUTUAL_GUILDS = 50278
_UNREACHABLE_FIX = (
    "the approver must share a server with the bot and allow direct messages from "
    "its members (Server → Privacy Settings → Direct Messages), then the card is sent again "
    "with the next request"
)


class DiscordNotifier:
    """Posts approval cards to Discord DMs and edits them once decided."""

    channel = "discord"
    edits_messages = True

    def __init__(
        self,
        rest: DiscordRest,
        *,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        tool_shell_args: Mapping[str, str] | None = None,
        offers: Callable[[Request], Offer] | None = None,
        inbox_button: bool = False,
    ) -> None:
        self._rest = rest
        self._inbox = inbox_button  # "Open inbox" on every live card (the inbox has a URL)
        self._retry = retry or RetryPolicy()
        self._sleep = sleep
        self._tool_shell_args = dict(tool_shell_args or {})
        self._offers = offers
        self._dms: dict[str, str] = {}

    async def send(
        self, request: Request, delivery: Delivery, *, key: str, retried: bool = False
    ) -> Receipt:
        """Post ``request``'s card to the Discord user ``delivery.address``."""
        view = self._view(request)
        body = render_discord(view, inbox=self._inbox, edit=edit_offer(view, request))
        return await self._post(body, delivery.address, key, f"request {request.id}")

    async def send_batch(
        self, requests: Sequence[Request], delivery: Delivery, *, key: str, retried: bool = False
    ) -> Receipt:
        """Post one card for a batch's calls (see :mod:`.batch_cards`)."""
        batch = present_batch(requests, tool_shell_args=self._tool_shell_args)
        body = render_discord_batch(batch, inbox=self._inbox)
        return await self._post(body, delivery.address, key, f"batch {batch.batch_id}")

    async def update(self, request: Request, receipt: Receipt) -> None:
        """Replace the card's buttons with the outcome; a pending request is left alone."""
        body = resolved_body(self._view(request), request)
        if body is not None:
            await self._edit(body, receipt, f"request {request.id}")

    async def update_batch(self, requests: Sequence[Request], receipt: Receipt) -> None:
        """Redraw the batch card with its calls as they are now."""
        batch = present_batch(requests, tool_shell_args=self._tool_shell_args)
        body = render_discord_batch(batch, inbox=self._inbox)
        await self._edit(body, receipt, f"batch {batch.batch_id}")

    async def close(self) -> None:
        await self._rest.close()

    def _view(self, request: Request) -> ApprovalView:
        return present(
            request,
            tool_shell_arg=self._tool_shell_args.get(request.tool),
            offer=self._offers(request) if self._offers is not None else None,
        )

    async def _post(self, body: dict[str, Any], address: str, key: str, subject: str) -> Receipt:
        label = f"Discord post of {subject} to {address}"
        sent = {**body, "nonce": _nonce(key), "enforce_nonce": True}
        ref: dict[str, str] = await self._retrying(label)(self._post_once, sent, address)
        return Receipt(channel=self.channel, address=address, ref=ref)

    async def _post_once(self, body: dict[str, Any], address: str) -> dict[str, str]:
        channel = await self._dm(address)
        message = await self._call(
            "POST",
            template="/channels/{channel}/messages",
            address=address,
            params={"channel": channel},
            body=body,
            major=channel,
        )
        message_id = message.get("id") if isinstance(message, dict) else None
        if not isinstance(message_id, str):
            raise DeliveryError("Discord answered a post without a message id")
        return {"channel_id": channel, "message_id": message_id}

    async def _dm(self, address: str) -> str:
        """The DM channel with ``address`` (opened once per process; Discord keeps it)."""
        channel = self._dms.get(address)
        if channel is None:
            answer = await self._call(
                "POST",
                template="/users/@me/channels",
                address=address,
                params={},
                body={"recipient_id": address},
                major="",
            )
            found = answer.get("id") if isinstance(answer, dict) else None
            if not isinstance(found, str):
                raise DeliveryError("Discord answered a DM channel without an id")
            channel = self._dms[address] = found
        return channel

    async def _edit(self, body: dict[str, Any], receipt: Receipt, subject: str) -> None:
        channel, message = receipt.ref.get("channel_id"), receipt.ref.get("message_id")
        if not channel or not message:
            raise PermanentDeliveryError(
                f"Discord receipt without channel and message: {receipt.ref}"
            )
        params = {"channel": channel, "message": message}
        label = f"Discord edit of {subject} in {channel}"
        await self._retrying(label)(
            self._call,
            "PATCH",
            template="/channels/{channel}/messages/{message}",
            address=receipt.address,
            params=params,
            body=body,
            major=channel,
        )

    async def _call(
        self,
        method: str,
        *,
        template: str,
        address: str,
        params: Mapping[str, str],
        body: Mapping[str, Any],
        major: str,
    ) -> Any:
        try:
            return await self._rest.call(method, template, params=params, body=body, major=major)
        except DiscordApiError as error:
            raise delivery_error(error, address) from error
        except TRANSPORT_ERRORS as error:
            raise DeliveryError(f"Discord {method} failed: {describe_error(error)}") from error

    def _retrying(self, label: str) -> Any:
        return delivery_retrying(self._retry, sleep=self._sleep, label=label)


def resolved_body(view: ApprovalView, request: Request) -> dict[str, Any] | None:
    """The decided card of ``request``, drawn from its stored outcome (``None`` while pending)."""
    if request.status == "pending":
        return None
    return render_discord_resolved(
        view,
        status=request.status,
        by=request.resolved_by,
        at=request.resolved_at or request.expires_at,
        reason=request.resolution_reason,
        scope=request.scope,
    )


def delivery_error(error: DiscordApiError, address: str) -> DeliveryError:
    """What a refused call means for the outbox: retry later, or never, and why."""
    text = f"Discord refused a call for user {address}: {error}"
    if error.status == 429 or error.status >= 500:
        return DeliveryError(text, status=error.status, retry_after=error.retry_after)
    if error.code in (CANNOT_DM, NO_MUTUAL_GUILDS):
        return PermanentDeliveryError(f"{text}; {_UNREACHABLE_FIX}", status=error.status)
    if error.status == 401:
        return PermanentDeliveryError(
            f"{text}; the bot token was refused: reset it in the Developer Portal (Bot → "
            "Reset Token) and update channels.discord.bot_token",
            status=401,
        )
    return PermanentDeliveryError(text, status=error.status)


def _nonce(key: str) -> str:
    """A Discord ``nonce`` (at most 25 characters) stable for one outbox row."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:25]
