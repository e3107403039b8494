"""LINE's typed commands: a 1:1 text message that is exactly one known word, answered.

LINE has no slash commands, so an approver types the word (``grants``) in
the chat with the bot. The word is matched whole, in any case and with
surrounding blanks (phones capitalise a message's first letter), so ordinary
chat that merely contains it stays ordinary chat. ``help`` lists them.

The table :data:`COMMANDS` is the dispatch: a word, what it does, one line for
the help. A command answers the person who typed it (a text, or LINE message
objects such as a Flex listing); one that changes state does so through a
postback button in its answer, which is stored before the 200 like any tap.
The ``id`` command predates this table and stays outside it
(``webhooks/_line_taps.py``): it must answer people tapgate does not know yet.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tapgate.channels.line.grants import SUMMARY, grants_answer
from tapgate.decisions.chat_commands import INBOX_SUMMARY, LinkMaker, run_command
from tapgate.gate.gate import Gate

__all__ = ["COMMANDS", "Command", "LineAnswer", "command_word", "run"]

LineAnswer = str | Sequence[Mapping[str, Any]]
"""A reply: one text, or up to five LINE message objects."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Command:
    """One typed command: its handler (gate, the sender's LINE user id, the web inbox's
    link maker) and its help line."""

    handler: Callable[[Gate, str, LinkMaker | None], Awaitable[LineAnswer]]
    summary: str


async def _grants(gate: Gate, user_id: str, links: LinkMaker | None) -> LineAnswer:
    return await grants_answer(gate, user_id)


async def _inbox(gate: Gate, user_id: str, links: LinkMaker | None) -> LineAnswer:
    """A single-use sign-in link to the web inbox (what it means: ``core.chat_commands``)."""
    directory = gate.directory
    told = await run_command(
        "inbox", directory=directory, channel="line", user_id=user_id, links=links
    )
    return told.text


async def _help(gate: Gate, user_id: str, links: LinkMaker | None) -> LineAnswer:
    lines = [f'"{word}": {command.summary}' for word, command in COMMANDS.items()]
    return "What you can type to tapgate:\n" + "\n".join(lines)


COMMANDS: Mapping[str, Command] = {
    "grants": Command(handler=_grants, summary=SUMMARY),
    "inbox": Command(handler=_inbox, summary=INBOX_SUMMARY),
    "help": Command(handler=_help, summary="this list"),
}


def command_word(text: str | None) -> str | None:
    """The command ``text`` is (``"grants"``), or ``None`` for anything else."""
    if text is None:
        return None
    word = text.strip().casefold()
    return word if word in COMMANDS else None


async def run(gate: Gate, word: str, user_id: str, *, links: LinkMaker | None = None) -> LineAnswer:
    """Answer the command ``word`` typed by ``user_id`` (a word :func:`command_word` gave)."""
    return await COMMANDS[word].handler(gate, user_id, links)
