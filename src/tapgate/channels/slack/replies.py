"""How a Slack tapper hears back: an ephemeral sentence, or one of tapgate's modals.

The sentences are :mod:`tapgate.decisions.texts`; this module only delivers
them, escaped by the one Slack rule (:mod:`tapgate.channels.slack.text`): they may
name a tool or a question's subject, and Slack would read ``<!here>`` in one as
a mention and ``*deploy*`` as bold.
"""

from __future__ import annotations

import logging
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.async_client import AsyncWebhookClient

from tapgate.channels.slack.modals import deny_all_modal, deny_modal, edit_modal, reply_modal
from tapgate.channels.slack.payloads import (
    BatchInteraction,
    InboxAsk,
    Interaction,
    RevokeInteraction,
)
from tapgate.channels.slack.text import escape
from tapgate.gate.models import Request

__all__ = ["SlackReplies"]

_log = logging.getLogger(__name__)

_SLACK_ERRORS = (SlackApiError, aiohttp.ClientError, TimeoutError)


class SlackReplies:
    """How a tapper hears back: an ephemeral sentence, or a modal (deny reason, answer, edit).

    Failures are logged, never raised: the decision (or the refusal) stands
    whether or not Slack shows the sentence. Nothing is retried, because a
    re-sent ephemeral or modal is worse than none.
    """

    def __init__(self, client: AsyncWebClient, *, timeout: float) -> None:
        self._client = client
        self._timeout = timeout

    async def tell(
        self,
        interaction: Interaction | BatchInteraction | RevokeInteraction | InboxAsk,
        text: str,
        *,
        escaped: bool = False,
    ) -> None:
        """Show ``text`` to the tapper only: in the conversation, else via ``response_url``.

        ``chat.postEphemeral`` works as long as the bot is in the conversation
        (the approval DM); a ``response_url`` only 5 times within 30 minutes,
        so it is the fallback. ``text`` is escaped here: it may name a tool or
        a question's subject, and Slack would read ``<!here>`` in it as a mention
        (``escaped``: the caller escaped it already, around a link of its own).
        """
        text = text if escaped else escape(text)
        if interaction.channel is not None:
            try:
                await self._client.chat_postEphemeral(
                    channel=interaction.channel, user=interaction.user_id, text=text
                )
            except _SLACK_ERRORS as error:
                _log.warning("Slack chat.postEphemeral failed: %s", error)
            else:
                return
        if interaction.response_url is None:
            _log.warning("could not tell Slack user %s: %s", interaction.user_id, text)
            return
        # Only a signed payload carries a response_url, so it is Slack's own URL.
        webhook = AsyncWebhookClient(
            interaction.response_url,
            timeout=self._timeout,  # type: ignore[arg-type]  # handed to aiohttp as seconds
            retry_handlers=[],
        )
        try:
            sent = await webhook.send(text=text, response_type="ephemeral", replace_original=False)
        except (aiohttp.ClientError, TimeoutError) as error:
            _log.warning("Slack response_url failed: %s", error)
            return
        if sent.status_code != 200:
            _log.warning("Slack response_url answered HTTP %s", sent.status_code)

    async def open_deny_modal(self, interaction: Interaction, request: Request) -> bool:
        """Open the reason modal on the tap's ``trigger_id``; False if Slack would not.

        A trigger id is valid for 3 seconds after the click and for one view.
        """
        return await self._open(interaction, deny_modal(request, interaction.channel), request)

    async def open_reply_modal(self, interaction: Interaction, request: Request) -> bool:
        """Open a question's answer modal on the tap's ``trigger_id``; False if Slack would not."""
        return await self._open(interaction, reply_modal(request, interaction.channel), request)

    async def open_edit_modal(self, interaction: Interaction, request: Request) -> bool:
        """Open the edit modal (one input per argument); False if Slack would not."""
        return await self._open(interaction, edit_modal(request, interaction.channel), request)

    async def open_deny_all_modal(self, interaction: BatchInteraction, calls: int) -> bool:
        """Open a batch's "Deny all" reason modal; False if Slack would not."""
        view = deny_all_modal(interaction.batch_id, calls, interaction.channel)
        return await self._open(interaction, view, interaction.batch_id)

    async def _open(
        self,
        interaction: Interaction | BatchInteraction,
        view: dict[str, Any],
        request: Request | str,
    ) -> bool:
        if interaction.trigger_id is None:
            return False
        try:
            await self._client.views_open(trigger_id=interaction.trigger_id, view=view)
        except _SLACK_ERRORS as error:
            named = request if isinstance(request, str) else request.id
            _log.warning("Slack views.open failed for %s: %s", named, error)
            return False
        return True
