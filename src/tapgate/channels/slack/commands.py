"""The ``/tapgate <subcommand>`` slash command: read, dispatched by its first word, answered.

A slash command arrives on the same signed request URL as the buttons
(``POST /webhooks/slack``, or Socket Mode), form-encoded with ``command``,
``text``, ``user_id``, ``team_id``, ``channel_id``, ``response_url`` and
``trigger_id``. ``SlackWebhook`` checks the signature on the raw bytes first;
bolt routes every command here, and the answer goes back in the 200 itself as
an ephemeral message (only the person who typed it sees it). Slack waits 3
seconds for it, so a subcommand only reads; anything that changes state
(a Revoke button on the answer) comes back as an interaction and takes the
record-before-acknowledging path.

Subcommands register themselves (:meth:`SlashCommands.add`): ``grants``
today, ``inbox`` next. ``help``, an empty ``/tapgate`` and an unknown word are
answered with the list. The command's own name is whatever the Slack app
calls it (``/tapgate`` in the shipped manifest), echoed back in the help.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from slack_bolt.async_app import AsyncAck
from slack_bolt.response import BoltResponse

from tapgate.channels.slack.text import escape
from tapgate.decisions.texts import NOT_KNOWN

__all__ = ["Answer", "SlashCommand", "SlashCommands", "parse_command"]

_log = logging.getLogger(__name__)

_TEXT_MAX = 500
"""Longest command text read: subcommands are a word or two."""


@dataclass(frozen=True, kw_only=True, slots=True)
class SlashCommand:
    """One verified slash command: who typed it, where, and the words after the command."""

    command: str
    subcommand: str
    rest: str
    user_id: str
    team: str | None
    channel: str | None = None
    response_url: str | None = None
    trigger_id: str | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class Answer:
    """An ephemeral answer: ``text`` (the fallback and notification) and optional blocks."""

    text: str
    blocks: list[dict[str, Any]] | None = field(default=None)


Handler = Callable[[SlashCommand], Awaitable[Answer]]


def parse_command(body: object) -> SlashCommand | None:
    """The slash command in a verified form body, or ``None`` when it is not one."""
    if not isinstance(body, dict):
        return None
    command, user_id, text = body.get("command"), body.get("user_id"), body.get("text", "")
    if not isinstance(command, str) or not command.startswith("/"):
        return None
    if not isinstance(user_id, str) or not user_id or not isinstance(text, str):
        return None
    words = text[:_TEXT_MAX].split(maxsplit=1)
    return SlashCommand(
        command=command[:40],
        subcommand=words[0].casefold() if words else "",
        rest=words[1] if len(words) > 1 else "",
        user_id=user_id,
        team=_str(body.get("team_id")),
        channel=_str(body.get("channel_id")),
        response_url=_str(body.get("response_url")),
        trigger_id=_str(body.get("trigger_id")),
    )


class SlashCommands:
    """``/tapgate``'s subcommands; :meth:`listener` is what bolt calls for every command.

    ``team_id`` pins the workspace as it does for taps: a command from any
    other is answered "not an approver" (``help`` still works).
    """

    def __init__(self, *, team_id: str | None = None) -> None:
        self._team_id = team_id
        self._handlers: dict[str, tuple[Handler, str]] = {}

    def add(self, name: str, handler: Handler, summary: str) -> None:
        """Answer ``/tapgate <name>`` with ``handler``; ``summary`` is its line in the help."""
        if name in self._handlers or name == "help":
            raise ValueError(f"the subcommand {name!r} is taken")
        self._handlers[name] = (handler, summary)

    async def listener(self, ack: AsyncAck, body: dict[str, Any]) -> BoltResponse:
        """Read, dispatch, and ack with the ephemeral answer (a 400 for a non-command)."""
        command = parse_command(body)
        if command is None:
            _log.warning("Slack slash command refused: not one we can read")
            return BoltResponse(status=400, body={"error": "malformed command"})
        answer = await self.answer(command)
        _log.info("Slack %s %s by %s", command.command, command.subcommand or "-", command.user_id)
        return await ack(text=answer.text, blocks=answer.blocks, response_type="ephemeral")

    async def answer(self, command: SlashCommand) -> Answer:
        """The subcommand's answer; the help for ``help``, nothing or an unknown word."""
        found = self._handlers.get(command.subcommand)
        if found is None:
            return self._help(command)
        if self._team_id is not None and command.team != self._team_id:
            _log.warning("Slack command from workspace %s refused", command.team)
            return Answer(text=NOT_KNOWN)
        return await found[0](command)

    def _help(self, command: SlashCommand) -> Answer:
        name = escape(command.command)
        lines = [f"`{name} {sub}`: {summary}" for sub, (_, summary) in self._handlers.items()]
        lines.append(f"`{name} help`: this list")
        asked = command.subcommand
        lead = (
            f"`{escape(asked[:40])}` is not a tapgate command. "
            if asked and asked != "help"
            else ""
        )
        return Answer(text=f"{lead}What you can ask tapgate:\n" + "\n".join(lines))


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
