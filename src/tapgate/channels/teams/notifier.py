"""Teams delivery: one Adaptive Card per approver in their 1:1 chat with the bot, kept current.

A bot cannot open a chat with a user from an id: the user installs the app
(or messages the bot), and the webhook stores where that conversation is
(:mod:`tapgate.store.conversations`). A card goes there; an approver with no
stored conversation is a :class:`~tapgate.errors.PermanentDeliveryError`
that says what to do. Teams can edit a sent card, so once a request is
decided every approver's card is redrawn in place (``updateActivity``) from
the stored request, whoever decided and on whichever channel.

Transient failures (429, 412, 502, 504, other 5xx, the network) are retried
by the one retry policy of the platform; Retry-After is honoured. Teams has
no idempotency key: a send retried after a lost answer may post a second
card (both are redrawn the same way once decided).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

import aiohttp

from tapgate.channels.contract import ConversationBook
from tapgate.channels.teams.batch_cards import render_batch
from tapgate.channels.teams.cards import render_request
from tapgate.channels.teams.connector import BotTokens, Connector
from tapgate.decisions.remember import Offer
from tapgate.delivery.batch_view import present_batch
from tapgate.delivery.notifier import Receipt
from tapgate.delivery.presentation import present
from tapgate.delivery.retry import (
    RetryPolicy,
    delivery_retrying,
)
from tapgate.errors import PermanentDeliveryError
from tapgate.gate.models import Delivery, Request

__all__ = ["NO_CONVERSATION", "TeamsNotifier"]

T = TypeVar("T")

NO_CONVERSATION = (
    "approver {approver} has no Teams conversation with tapgate yet: they must install the "
    "tapgate app in Teams (or send the bot a message) once; cards reach them after that"
)


class TeamsNotifier:
    """Posts and redraws approval cards through the Bot Connector, as the bot."""

    channel = "teams"
    edits_messages = True

    def __init__(
        self,
        *,
        app_id: str,
        app_password: str,
        token_url: str,
        conversations: ConversationBook | None,
        timeout: float = 10.0,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        tool_shell_args: Mapping[str, str] | None = None,
        offers: Callable[[Request], Offer] | None = None,
        public_url: str | None = None,
    ) -> None:
        self._conversations = conversations
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._retry = retry or RetryPolicy()
        self._sleep = sleep
        self._shell = dict(tool_shell_args or {})
        self._offers = offers
        self._public_url = public_url  # "Open in inbox" on asking cards (the inbox is reachable)
        self._session: aiohttp.ClientSession | None = None
        tokens = BotTokens(
            app_id=app_id, app_password=app_password, token_url=token_url, session=self._http
        )
        self._connector = Connector(tokens, self._http)

    def _http(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(timeout=self._timeout)
        return self._session

    async def send(
        self, request: Request, delivery: Delivery, *, key: str, retried: bool = False
    ) -> Receipt:
        """Post ``request``'s card in the approver's chat with the bot."""
        view = present(
            request,
            tool_shell_arg=self._shell.get(request.tool),
            offer=self._offers(request) if self._offers is not None else None,
        )
        activity = _built(lambda: render_request(view, request, public_url=self._public_url))
        return await self._post(delivery, activity, f"request {request.id}")

    async def send_batch(
        self, requests: Sequence[Request], delivery: Delivery, *, key: str, retried: bool = False
    ) -> Receipt:
        """Post one card for a batch's calls (see :mod:`.batch_cards`)."""
        batch = present_batch(requests, tool_shell_args=self._shell)
        activity = _built(lambda: render_batch(batch, public_url=self._public_url))
        return await self._post(delivery, activity, f"batch {batch.batch_id}")

    async def update(self, request: Request, receipt: Receipt) -> None:
        """Redraw the posted card from ``request`` as it is now (decided: no buttons)."""
        view = present(request, tool_shell_arg=self._shell.get(request.tool))
        await self._redraw(
            receipt, _built(lambda: render_request(view, request, public_url=self._public_url))
        )

    async def update_batch(self, requests: Sequence[Request], receipt: Receipt) -> None:
        """Redraw a batch card: decided calls show their outcome."""
        batch = present_batch(requests, tool_shell_args=self._shell)
        await self._redraw(
            receipt, _built(lambda: render_batch(batch, public_url=self._public_url))
        )

    async def close(self) -> None:
        """Close the HTTP session; a later call opens a new one."""
        session, self._session = self._session, None
        if session is not None:
            await session.close()

    async def _post(self, delivery: Delivery, activity: dict[str, Any], subject: str) -> Receipt:
        reference = await self._reference(delivery)
        service_url, conversation = reference["service_url"], reference["conversation_id"]
        label = f"Teams card for {subject} to {delivery.approver}"
        sent = await self._retrying(
            label, self._connector.send, service_url, conversation, activity
        )
        ref = {"service_url": service_url, "conversation_id": conversation, "activity_id": sent}
        return Receipt(channel=self.channel, address=delivery.address, ref=ref)

    async def _redraw(self, receipt: Receipt, activity: dict[str, Any]) -> None:
        ref = receipt.ref
        if not ref.get("activity_id") or not ref.get("service_url"):
            return  # nothing posted that could be found again
        await self._retrying(
            f"Teams card update in {ref['conversation_id']}",
            self._connector.update,
            ref["service_url"],
            ref["conversation_id"],
            ref["activity_id"],
            activity,
        )

    async def _reference(self, delivery: Delivery) -> dict[str, str]:
        found = None
        if self._conversations is not None:
            found = await self._conversations.get(self.channel, delivery.address)
        if not found or not found.get("service_url") or not found.get("conversation_id"):
            raise PermanentDeliveryError(NO_CONVERSATION.format(approver=delivery.approver))
        return found

    async def _retrying(self, label: str, call: Callable[..., Awaitable[T]], *args: Any) -> T:
        retrying = delivery_retrying(self._retry, sleep=self._sleep, label=label)
        result: T = await retrying(call, *args)
        return result


def _built(render: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    try:
        return render()
    except ValueError as error:  # a card that cannot fit: no retry will make it fit
        raise PermanentDeliveryError(str(error)) from error
