"""What an approver may send the bot: ``/start``, ``/grants``, ``/inbox``, ``/help``.

``/start`` is what Telegram sends when someone first opens the bot; it must
answer people tapgate does not know yet, because it is how they learn their
user id (``from.id``) for ``tapgate.yaml``. The others act for a configured
approver only, through the domain (:mod:`tapgate.decisions.chat_grants`,
:mod:`tapgate.decisions.chat_commands`). ``/grants`` lists the sender's
grants with a Revoke button each; the Revoke press is stored before it is
acknowledged, like any press, and lands in :func:`revoke`.

A command may carry the bot's name (``/grants@tapgate_bot``, as Telegram
writes it in menus) and arguments, which are ignored.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

from tapgate.channels.telegram.cards import Keyboard, button, escape
from tapgate.decisions.buttons import revoke_postback_data
from tapgate.decisions.chat_commands import INBOX_SUMMARY, LinkMaker, run_command
from tapgate.decisions.chat_grants import Asker, Listing, list_own, revoke_own
from tapgate.gate.gate import Gate

__all__ = ["COMMANDS", "LIST_MAX", "Say", "command_word", "revoke", "run", "start_text"]

LIST_MAX = 10
"""Grants one listing shows (the newest); the heading says how many more."""
_LINE_MAX = 300


@dataclass(frozen=True, kw_only=True, slots=True)
class Say:
    """A message to send in the sender's chat: HTML text, buttons, or a reply prompt."""

    text: str
    keyboard: Keyboard = field(default_factory=list)
    force_reply: bool = False
    """Open the keyboard as a reply to this message (a reason or an answer is asked for)."""


def plain(text: str) -> Say:
    """A domain sentence (plain text) as a message."""
    return Say(text=escape(text))


def start_text(user_id: str, known: bool) -> str:
    """``/start``'s answer: the sender's id and where it goes (or that it is in place)."""
    if known:
        return (
            f"Your Telegram user id is <code>{user_id}</code>; tapgate knows you as an "
            "approver, so approval requests will arrive here. Send /help for the commands."
        )
    return (
        f"Your Telegram user id is <code>{user_id}</code>. To approve requests here, "
        "ask the operator to add it to tapgate.yaml under your approver entry:\n"
        f'<pre>approvers:\n  - name: you\n    telegram: "{user_id}"</pre>'
    )


async def _grants(gate: Gate, user_id: str, links: LinkMaker | None) -> Say:
    listing = await list_own(gate, Asker(channel="telegram", user_id=user_id), limit=LIST_MAX)
    return listing_say(listing)


def listing_say(listing: Listing, before: str | None = None) -> Say:
    """The listing as one message: heading, one line per grant, a Revoke button each."""
    lines = [escape(before)] if before else []
    lines.append(f"<b>{escape(listing.message)}</b>")
    rows: Keyboard = []
    for number, item in enumerate(listing.items, start=1):
        lines.append(f"{number}. {escape(item.line[:_LINE_MAX])}")
        rows.append([button(f"Revoke {number}", revoke_postback_data(item.grant.id))])
    return Say(text="\n".join(lines), keyboard=rows)


async def _inbox(gate: Gate, user_id: str, links: LinkMaker | None) -> Say:
    told = await run_command(
        "inbox", directory=gate.directory, channel="telegram", user_id=user_id, links=links
    )
    return plain(told.text)


async def _help(gate: Gate, user_id: str, links: LinkMaker | None) -> Say:
    lines = [f"/{word}: {escape(summary)}" for word, (_, summary) in COMMANDS.items()]
    return Say(text="What you can send tapgate:\n" + "\n".join(lines))


Handler = Callable[[Gate, str, LinkMaker | None], Awaitable[Say]]

COMMANDS: Mapping[str, tuple[Handler, str]] = {
    "grants": (_grants, "your grants (Always allow, Allow for session), each with a Revoke button"),
    "inbox": (_inbox, INBOX_SUMMARY),
    "help": (_help, "this list"),
}


def command_word(text: str | None) -> str | None:
    """``"start"``, ``"grants"``… for a command message, ``None`` for anything else."""
    if text is None or not text.startswith("/"):
        return None
    word = text[1:].split(maxsplit=1)[0] if len(text) > 1 else ""
    word = word.split("@", 1)[0].casefold()
    return word if word == "start" or word in COMMANDS else None


async def run(gate: Gate, word: str, user_id: str, *, links: LinkMaker | None) -> Say:
    """Answer the command ``word`` (one :func:`command_word` gave) sent by ``user_id``."""
    if word == "start":
        known = gate.directory.identify("telegram", user_id) is not None
        return Say(text=start_text(user_id, known))
    handler, _ = COMMANDS[word]
    return await handler(gate, user_id, links)


async def revoke(gate: Gate, user_id: str, grant_id: str, event: str) -> Say | None:
    """A Revoke press, applied once per ``event``; ``None`` for a replay already applied."""
    asker = Asker(channel="telegram", user_id=user_id)
    done = await revoke_own(gate, asker, grant_id, event=event)
    if done.kind == "duplicate":
        return None
    if done.kind != "revoked":
        return plain(done.message)
    listing = await list_own(gate, asker, limit=LIST_MAX)
    return listing_say(listing, before=done.message) if listing.items else plain(done.message)
