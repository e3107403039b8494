"""What an approver may type to the bot in Teams: ``whoami``, ``grants``, ``inbox``, ``help``.

Teams has no slash commands for a bot in a personal chat, so the approver
types the word; it is matched whole, in any case, with surrounding blanks
and an optional leading ``/`` (so ordinary chat that merely contains it stays
ordinary chat). ``id`` is kept as another name for ``whoami``.

``whoami`` must answer people tapgate does not know yet: it is how they learn
the ``<tenant id>/<object id>`` to put in ``approvers[].teams``. The others act
for a configured approver only, through the domain:
:mod:`tapgate.decisions.chat_grants` lists the sender's grants (an Adaptive
Card with a Revoke button each; the press is a press like any other, stored
before it is answered, and lands in :meth:`TeamsCommands.revoke`, which
answers with the listing as it is now), :mod:`tapgate.decisions.chat_commands`
makes the single-use web-inbox sign-in link (opening it shows a page with a
button; nothing signs in on a GET).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from tapgate.channels.teams.card_parts import attachment_activity, button, card, line
from tapgate.decisions.buttons import revoke_postback_data
from tapgate.decisions.chat_commands import INBOX_SUMMARY, LinkMaker, run_command
from tapgate.decisions.chat_grants import Asker, Listing, list_own, revoke_own
from tapgate.gate.gate import Gate

__all__ = ["LIST_MAX", "TeamsCommands", "command_word", "text_activity"]

LIST_MAX = 10
"""Grants one listing shows (the newest); the heading says how many more."""
_CHANNEL = "teams"
_LINE_MAX = 300
_ALIASES = {"id": "whoami"}


def command_word(text: str | None) -> str | None:
    """The command ``text`` is (``"grants"``), or ``None`` for anything else."""
    if text is None:
        return None
    word = text.strip().removeprefix("/").casefold()
    word = _ALIASES.get(word, word)
    return word if word in _SUMMARIES else None


def text_activity(text: str) -> dict[str, Any]:
    """A plain-text message (Teams shows it as typed: no Markdown)."""
    return {"type": "message", "text": text, "textFormat": "plain"}


class TeamsCommands:
    """Answers a typed command, and a Revoke press on a listing, for one bot."""

    def __init__(self, gate: Gate, links: LinkMaker | None) -> None:
        self._gate = gate
        self._links = links
        self._handlers: Mapping[str, Callable[[str], Awaitable[dict[str, Any]]]] = {
            "whoami": self._whoami,
            "grants": self._grants,
            "inbox": self._inbox,
            "help": self._help,
        }

    async def answer(self, word: str, presser: str) -> dict[str, Any]:
        """The message answering ``word`` (one :func:`command_word` gave) from ``presser``."""
        return await self._handlers[word](presser)

    async def revoke(self, presser: str, grant_id: str, event: str) -> dict[str, Any]:
        """A Revoke press, applied once per ``event``: the listing as it is now, under what the
        press did (a redelivered press already applied says nothing new)."""
        asker = Asker(channel=_CHANNEL, user_id=presser)
        done = await revoke_own(self._gate, asker, grant_id, event=event)
        listing = await list_own(self._gate, asker, limit=LIST_MAX)
        return _listing(listing, before=done.message or None)

    async def _whoami(self, presser: str) -> dict[str, Any]:
        approver = self._gate.directory.identify(_CHANNEL, presser)
        if approver is None:
            return text_activity(
                f"Your Teams id for tapgate.yaml (approvers[].teams) is {presser}. "
                "Ask the operator to add it under your approver entry."
            )
        return text_activity(
            f"You are approver {approver} (Teams id {presser}): approval requests arrive here."
        )

    async def _grants(self, presser: str) -> dict[str, Any]:
        asker = Asker(channel=_CHANNEL, user_id=presser)
        return _listing(await list_own(self._gate, asker, limit=LIST_MAX))

    async def _inbox(self, presser: str) -> dict[str, Any]:
        directory = self._gate.directory
        told = await run_command(
            "inbox", directory=directory, channel=_CHANNEL, user_id=presser, links=self._links
        )
        if told.url is None:
            return text_activity(told.text)
        action = {"type": "Action.OpenUrl", "title": "Sign in to the web inbox", "url": told.url}
        return attachment_activity(card([line(told.text)], [action]), "Web inbox sign-in link")

    async def _help(self, presser: str) -> dict[str, Any]:
        del presser
        lines = [f'"{word}": {summary}' for word, summary in _SUMMARIES.items()]
        return text_activity("What you can send tapgate:\n" + "\n".join(lines))


def _listing(listing: Listing, before: str | None = None) -> dict[str, Any]:
    """The grants as one card: heading, one line per grant, a Revoke button each."""
    body = [line(before, weight="Bolder", color="Attention")] if before else []
    body.append(line(listing.message, weight="Bolder"))
    for number, item in enumerate(listing.items, start=1):
        revoke = button(f"Revoke {number}", revoke_postback_data(item.grant.id))
        body += [
            {**line(f"{number}. {item.line[:_LINE_MAX]}"), "separator": True},
            {"type": "ActionSet", "actions": [revoke]},
        ]
    return attachment_activity(card(body, []), listing.message)


_SUMMARIES: Mapping[str, str] = {
    "whoami": "your Teams id, and whether tapgate knows you as an approver",
    "grants": "your grants (Always allow, Allow for session), each with a Revoke button",
    "inbox": INBOX_SUMMARY,
    "help": "this list",
}
