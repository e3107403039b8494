"""A pressed card tapgate does not know is redrawn from the stored outcome (duplicate cards).

Telegram's ``sendMessage`` has no idempotency key and a bot cannot read its
chats' history, so a send whose answer was lost (a timeout after Telegram
accepted it, a connection dropped after success) cannot be checked: the
outbox sends again and the approver may see two cards. tapgate's choice is
to keep the retry (a card that never arrives costs an answer; a duplicate
costs a glance) and make the duplicate harmless:

- both cards carry the same buttons (a reference to the request, never its
  contents), so either press decides, once, through the one compare-and-set;
- the dispatcher redraws the card whose ``message_id`` it learnt; the other's
  id is learnt when it is pressed (``callback_query.message``): after a press
  on a request's button that leaves the request decided, the pressed message
  is redrawn here with the outcome and no buttons.

Each pressed message is redrawn at most once per process (a bounded memory),
so fifty presses on one card cost one edit, not fifty. Batch cards are not
redrawn here (the batch's own update pass redraws the card it knows).
"""

from __future__ import annotations

import logging
from collections import OrderedDict

import aiohttp

from tapgate.channels.telegram.api import BotApi, BotApiError
from tapgate.channels.telegram.cards import render_resolved
from tapgate.channels.telegram.updates import Update
from tapgate.decisions.buttons import parse_deny_reason_postback_data, parse_postback_data
from tapgate.delivery.presentation import present
from tapgate.delivery.retry import TRANSPORT_ERRORS
from tapgate.errors import RequestNotFound
from tapgate.gate.gate import Gate

__all__ = ["StaleCards"]

_log = logging.getLogger("tapgate.channels.telegram")
_REMEMBERED = 4096
_TRANSPORT: tuple[type[BaseException], ...] = (*TRANSPORT_ERRORS, aiohttp.ClientError)


class StaleCards:
    """Redraws pressed cards of decided requests, once each."""

    def __init__(self, gate: Gate, api: BotApi) -> None:
        self._gate = gate
        self._api = api
        self._redrawn: OrderedDict[tuple[str, int], None] = OrderedDict()

    async def redraw(self, update: Update) -> None:
        """If ``update`` pressed a request's button and the request is decided, redraw its card."""
        chat, message = update.chat_id, update.message_id
        if update.kind != "press" or chat is None or message is None or not update.private:
            return
        parsed = parse_postback_data(update.data)
        request_id = parsed[1] if parsed else parse_deny_reason_postback_data(update.data)
        if request_id is None or (chat, message) in self._redrawn:
            return
        try:
            request = await self._gate.get_request(request_id)
        except RequestNotFound:
            return
        if request.status == "pending" or request.batch_id is not None:
            return  # a batch's calls are on its batch card: the batch's update pass redraws it
        self._remember((chat, message))
        card = render_resolved(
            present(request),
            status=request.status,
            by=request.resolved_by,
            at=request.resolved_at or request.expires_at,
            reason=request.resolution_reason,
            scope=request.scope,
        )
        fields = {"chat_id": chat, "message_id": message, **card.payload()}
        try:
            await self._api.call("editMessageText", fields)
        except BotApiError as error:
            if not error.not_modified:  # "not modified": the dispatcher drew it already
                _log.info("Telegram redraw of a pressed card failed: %s", error)
        except _TRANSPORT as error:
            _log.info("Telegram redraw of a pressed card failed: %s", type(error).__name__)

    def _remember(self, key: tuple[str, int]) -> None:
        self._redrawn[key] = None
        while len(self._redrawn) > _REMEMBERED:
            self._redrawn.popitem(last=False)
