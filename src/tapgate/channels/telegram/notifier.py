"""Telegram delivery: one card per approver in their private chat with the bot, edited once decided.

``sendMessage`` to ``chat_id`` = the approver's user id (a private chat's id
is its user's id). Telegram has no idempotency key and a bot cannot read its
chat's history, so a send whose answer was lost (a timeout or a dropped
connection after the request went out: :func:`~tapgate.delivery.retry.may_have_been_delivered`)
cannot be checked. It is retried all the same, deliberately (a card that
never arrives costs an answer, a duplicate only a glance), and logged as
possibly doubled; the duplicate is harmless: both cards carry the same
buttons, a press on either decides once, and the one whose id tapgate never
learnt is redrawn when it is pressed (:mod:`.stale`).

Failures, translated once (:meth:`TelegramNotifier._failure`):

- 403 ("bot can't initiate conversation with a user", "bot was blocked by
  the user") and 400 "chat not found": a bot cannot message someone who never
  pressed Start. A :class:`~tapgate.errors.PermanentDeliveryError` naming the
  approver and the fix, never retried;
- 429: ``parameters.retry_after`` is honoured (the short retry sleeps it, a
  long one goes back to the outbox), and the wait holds every send of the bot
  (:class:`~tapgate.channels.telegram.api.FloodGate`);
- 5xx and transport errors: retried through the one policy (:mod:`tapgate.delivery.retry`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from tapgate.channels.telegram.api import BotApi, BotApiError
from tapgate.channels.telegram.cards import Card, render_batch, render_card, render_resolved
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
)
from tapgate.errors import DeliveryError, PermanentDeliveryError
from tapgate.gate.models import Delivery, Request

__all__ = ["TelegramNotifier", "unreachable_hint"]

_CHAT_NOT_FOUND = "chat not found"
_log = logging.getLogger("tapgate.channels.telegram")


def unreachable_hint(approver: str, user_id: str) -> str:
    """The fix for a 403: the approver starts the bot once (Telegram's rule, not tapgate's)."""
    return (
        f"{approver} (Telegram user {user_id}) has not started the bot or has blocked it: "
        f"{approver} must open a chat with the bot and press Start (or send /start), "
        "then tapgate can reach them"
    )


class TelegramNotifier:
    """Sends and edits approval cards through the Bot API (:class:`BotApi`)."""

    channel = "telegram"
    edits_messages = True

    def __init__(
        self,
        bot_token: str,
        *,
        api_base_url: str = "https://api.telegram.org",
        timeout: float = 10.0,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        clock: Callable[[], float] = time.monotonic,
        tool_shell_args: Mapping[str, str] | None = None,
        offers: Callable[[Request], Offer] | None = None,
    ) -> None:
        self._api = BotApi(
            bot_token, base_url=api_base_url, timeout=timeout, sleep=sleep, clock=clock
        )
        self._retry = retry or RetryPolicy()
        self._sleep = sleep
        self._tool_shell_args = dict(tool_shell_args or {})
        self._offers = offers

    async def send(
        self, request: Request, delivery: Delivery, *, key: str, retried: bool = False
    ) -> Receipt:
        """Post ``request``'s card to the approver's private chat."""
        card = render_card(self._view(request))
        return await self._send(card, delivery, f"request {request.id}")

    async def send_batch(
        self, requests: Sequence[Request], delivery: Delivery, *, key: str, retried: bool = False
    ) -> Receipt:
        """Post one card listing a batch's calls (see :func:`~.cards.render_batch`)."""
        batch = present_batch(requests, tool_shell_args=self._tool_shell_args)
        return await self._send(render_batch(batch), delivery, f"batch {batch.batch_id}")

    async def update(self, request: Request, receipt: Receipt) -> None:
        """Replace the card's buttons with the stored outcome (a pending request is left alone)."""
        if request.status == "pending":
            return
        card = render_resolved(
            self._view(request),
            status=request.status,
            by=request.resolved_by,
            at=request.resolved_at or request.expires_at,
            reason=request.resolution_reason,
            scope=request.scope,
        )
        await self._edit(card, receipt, f"request {request.id}")

    async def update_batch(self, requests: Sequence[Request], receipt: Receipt) -> None:
        """Redraw the batch card as its calls are now (decided ones lose their buttons)."""
        batch = present_batch(requests, tool_shell_args=self._tool_shell_args)
        await self._edit(render_batch(batch), receipt, f"batch {batch.batch_id}")

    async def close(self) -> None:
        """Close the Bot API session."""
        await self._api.close()

    def _view(self, request: Request) -> ApprovalView:
        return present(
            request,
            tool_shell_arg=self._tool_shell_args.get(request.tool),
            offer=self._offers(request) if self._offers is not None else None,
        )

    async def _send(self, card: Card, delivery: Delivery, subject: str) -> Receipt:
        payload = {"chat_id": delivery.address, **card.payload()}
        label = f"Telegram send of {subject} to {delivery.approver}"
        result = await self._retrying(label)(self._call, "sendMessage", payload, delivery)
        ref = {"chat_id": delivery.address}
        if isinstance(result, dict) and result.get("message_id") is not None:
            ref["message_id"] = str(result["message_id"])
        return Receipt(channel=self.channel, address=delivery.address, ref=ref)

    async def _edit(self, card: Card, receipt: Receipt, subject: str) -> None:
        chat, message = receipt.ref.get("chat_id"), receipt.ref.get("message_id")
        if not chat or not message:
            raise PermanentDeliveryError(
                f"Telegram receipt without chat and message: {receipt.ref}"
            )
        payload = {"chat_id": chat, "message_id": int(message), **card.payload()}
        label = f"Telegram edit of {subject} in chat {chat}"
        await self._retrying(label)(self._call, "editMessageText", payload, None)

    def _retrying(self, label: str) -> Any:
        return delivery_retrying(self._retry, sleep=self._sleep, label=label)

    async def _call(
        self, method: str, payload: Mapping[str, Any], delivery: Delivery | None
    ) -> Any:
        """One attempt, every failure translated into a :class:`DeliveryError`."""
        try:
            return await self._api.call(method, payload)
        except BotApiError as error:
            if method == "editMessageText" and error.not_modified:
                return None  # the card shows this already (a replayed update)
            raise _failure(error, delivery) from error
        except TRANSPORT_ERRORS as error:
            if method == "sendMessage" and may_have_been_delivered(error) and delivery is not None:
                _log.warning(
                    "Telegram sendMessage to %s got no answer (%s): it may have been delivered, "
                    "so the retry may show a second card; both work, and a press redraws either",
                    delivery.approver,
                    describe_error(error),
                )
            raise DeliveryError(f"Telegram {method} failed: {describe_error(error)}") from error


def _failure(error: BotApiError, delivery: Delivery | None) -> DeliveryError:
    text = str(error)
    unreachable = error.status == 403 or (
        error.status == 400 and _CHAT_NOT_FOUND in error.description.lower()
    )
    if unreachable and delivery is not None:
        hint = unreachable_hint(delivery.approver, delivery.address)
        return PermanentDeliveryError(f"{text}. {hint}", status=error.status)
    if is_transient_status(error.status):
        return DeliveryError(text, status=error.status, retry_after=error.retry_after)
    return PermanentDeliveryError(text, status=error.status)
