"""Sign-in links from Slack: ``/tapgate inbox`` and the cards' "Open inbox" button.

``/tapgate inbox`` is one subcommand of the ``/tapgate`` dispatch
(``_slack_commands``): :meth:`SlackSignIn.command` answers it in the ack, as an
ephemeral only its sender sees. A card's "Open inbox" button is the same
command for whoever taps it: acknowledged at once, then told ephemerally
(``chat.postEphemeral``, else the ``response_url``). What ``inbox`` means (who
gets a link, and the words) is :mod:`tapgate.decisions.chat_commands`, the same as
LINE's typed ``inbox``.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from slack_bolt.async_app import AsyncAck
from slack_bolt.response import BoltResponse

from tapgate.channels.slack.commands import Answer, SlashCommand
from tapgate.channels.slack.payloads import InboxAsk
from tapgate.channels.slack.replies import SlackReplies
from tapgate.channels.slack.text import escape
from tapgate.decisions.chat_commands import LinkMaker, run_command
from tapgate.decisions.texts import NO_INBOX_FOR_STRANGERS
from tapgate.gate.directory import Directory

__all__ = ["SlackSignIn"]


class SlackSignIn:
    """``/tapgate inbox`` and "Open inbox"; ``spawn`` runs work in a task the webhook owns."""

    def __init__(
        self,
        *,
        directory: Directory,
        replies: SlackReplies,
        links: LinkMaker | None,
        team_id: str | None,
        spawn: Callable[[Coroutine[Any, Any, None]], None],
    ) -> None:
        self._directory = directory
        self._replies = replies
        self._links = links
        self._team_id = team_id
        self._spawn = spawn

    async def command(self, sent: SlashCommand) -> Answer:
        """``/tapgate inbox``: the sender's link, in the ack (workspace checked already)."""
        return Answer(text=await self._mrkdwn(sent.user_id, sent.team))

    async def open_inbox(self, ack: AsyncAck, body: dict[str, Any]) -> BoltResponse:
        """A card's "Open inbox" button: ``inbox`` for whoever tapped it, told ephemerally."""
        asked = InboxAsk.from_button(body)
        response: BoltResponse = await ack()
        if asked is not None:
            self._spawn(self._tell(asked))
        return response

    async def _tell(self, asked: InboxAsk) -> None:
        if self._team_id is not None and asked.team != self._team_id:
            await self._replies.tell(asked, NO_INBOX_FOR_STRANGERS)  # another workspace
            return
        text = await self._mrkdwn(asked.user_id, asked.team)
        await self._replies.tell(asked, text, escaped=True)

    async def _mrkdwn(self, user_id: str, team: str | None) -> str:
        """The answer as Slack mrkdwn: the sentence escaped, the link in Slack's ``<url>``.

        Not escaped as a whole: the link is ours, and escaping would turn its
        ``_`` into a lookalike.
        """
        told = await run_command(
            "inbox",
            directory=self._directory,
            channel="slack",
            user_id=user_id,
            team=team,
            links=self._links,
        )
        if told.url is None or told.template is None:
            return escape(told.text)
        words = escape(told.template).split(escape("{url}"))
        return f"<{told.url}>".join(words)
