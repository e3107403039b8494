"""Sign-in links from Slack: ``/tapgate inbox`` and the cards' "Open inbox" button.

Slack posts a slash command, form-encoded and signed like a tap, to the same
request URL (or over Socket Mode); bolt routes ``/tapgate`` here. What a
command means is :mod:`tapgate.core.chat_commands` (the same as a text typed
to the LINE bot); this module acknowledges within Slack's 3 seconds and tells
the sender the answer ephemerally (``chat.postEphemeral``, else the
command's ``response_url``), so only they see a sign-in link. A card's "Open
inbox" button is the ``inbox`` command of whoever taps it.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from slack_bolt.async_app import AsyncAck
from slack_bolt.response import BoltResponse

from tapgate.core.chat_commands import COMMANDS, Command, LinkMaker, parse_command, run_command
from tapgate.core.directory import Directory
from tapgate.core.slack_text import escape
from tapgate.core.tap_texts import NO_INBOX_FOR_STRANGERS
from tapgate.webhooks._slack_payloads import InboxAsk
from tapgate.webhooks._slack_replies import SlackReplies

__all__ = ["COMMAND", "SlackSignIn"]

COMMAND = "/tapgate"
_USAGE = "Usage: /tapgate " + " | ".join(COMMANDS)


class SlackSignIn:
    """Answers ``/tapgate`` (``inbox``) and "Open inbox"; ``spawn`` runs the work in a task
    the webhook owns.

    When a ``/tapgate`` dispatch with other subcommands exists, ``inbox`` is one of
    them: :meth:`answer_for` gives its ephemeral mrkdwn for any sender.
    """

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

    async def __call__(self, ack: AsyncAck, body: dict[str, Any]) -> BoltResponse:
        """Acknowledge at once (with the usage for an unknown command), then answer."""
        sent = InboxAsk.parse(body)
        command = None if sent is None else parse_command(sent.text)
        if sent is None or command is None:
            response: BoltResponse = await ack(text=_USAGE)
            return response
        response = await ack()
        self._spawn(self._answer(sent, command))
        return response

    async def open_inbox(self, ack: AsyncAck, body: dict[str, Any]) -> BoltResponse:
        """A card's "Open inbox" button: ``inbox`` for whoever tapped it."""
        sent = InboxAsk.from_button(body)
        response: BoltResponse = await ack()
        if sent is not None:
            self._spawn(self._answer(sent, "inbox"))
        return response

    async def _answer(self, sent: InboxAsk, command: Command) -> None:
        await self._replies.tell(sent, await self.answer_for(sent, command), escaped=True)

    async def answer_for(self, sent: InboxAsk, command: Command = "inbox") -> str:
        """The ephemeral answer to ``command`` from ``sent``'s sender, as Slack mrkdwn."""
        if self._team_id is not None and sent.team != self._team_id:
            return escape(NO_INBOX_FOR_STRANGERS)  # another workspace
        told = await run_command(
            command,
            directory=self._directory,
            channel="slack",
            user_id=sent.user_id,
            team=sent.team,
            links=self._links,
        )
        if told.url is None or told.template is None:
            return escape(told.text)
        # The sentence escaped for mrkdwn, the link in Slack's own <url> syntax (unescaped:
        # it is ours, and escaping would turn its "_" into a lookalike).
        words = escape(told.template).split(escape("{url}"))
        return f"<{told.url}>".join(words)
