"""tapgate's slash commands on Discord: ``/whoami``, ``/grants``, ``/inbox``, ``/help``.

Discord delivers a slash command as an interaction of type 2
(APPLICATION_COMMAND) to the same Interactions Endpoint as a press, signed
the same way; each is answered at once, inside the 3-second window, with a
message only the sender sees (type 4, ``flags: 64``). What a command does is
the domain's (:mod:`tapgate.decisions.chat_grants`,
:mod:`tapgate.decisions.chat_commands`); this module speaks Discord:

- ``/whoami`` answers anyone, because it is how a person learns the user id
  the operator puts under ``approvers[].discord``;
- ``/grants`` lists the sender's own grants with a Revoke button each
  (``v=1&a=revoke&g=<grant id>``). A Revoke press is stored before it is
  acknowledged, like any press, and lands in :meth:`DiscordCommands.revoke`,
  where the domain checks the presser made that grant;
- ``/inbox`` (and a card's "Open inbox") answers with a single-use sign-in
  link and a link button (style 5) to it. Opening the link only shows a
  "Sign in" button; the sign-in happens on its POST. ``SUPPRESS_EMBEDS``
  keeps Discord from fetching a preview of it.

The commands exist in Discord once registered (:mod:`.registration`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tapgate.channels.discord.cards import BUTTON, NO_MENTIONS, STYLE
from tapgate.channels.discord.responses import Response, ephemeral, update
from tapgate.channels.discord.text import escape
from tapgate.decisions.buttons import revoke_postback_data
from tapgate.decisions.chat_commands import INBOX_SUMMARY, LinkMaker, run_command
from tapgate.decisions.chat_grants import Asker, Listing, list_own, revoke_own
from tapgate.gate.gate import Gate

__all__ = ["COMMANDS", "LIST_MAX", "DiscordCommands", "whoami_text"]

COMMANDS: Mapping[str, str] = {
    "whoami": "Your Discord user id, and where it goes in tapgate.yaml",
    "grants": "Your grants (Always allow, Allow for session), each with a Revoke button",
    "inbox": INBOX_SUMMARY[0].upper() + INBOX_SUMMARY[1:],
    "help": "What you can ask tapgate here",
}
"""Each command's name and the description Discord shows (at most 100 characters)."""
LIST_MAX = 10
"""Grants one listing shows (the newest); the heading says how many more."""
_SUPPRESS_EMBEDS = 4
_LINK_STYLE = 5
_LINE_MAX = 300


def whoami_text(user_id: str, known: bool) -> str:
    """``/whoami``'s answer: the sender's id and where it goes (or that it is in place)."""
    if known:
        return (
            f"Your Discord user id is `{user_id}`; tapgate knows you as an approver, so "
            "approval requests arrive in your DMs with this bot. Send /help for the commands."
        )
    return (
        f"Your Discord user id is `{user_id}`. To approve requests here, ask the operator "
        "to add it to tapgate.yaml under your approver entry (quoted: it is a string):\n"
        f'```yaml\napprovers:\n  - name: you\n    discord: "{user_id}"\n```'
    )


class DiscordCommands:
    """Answers the slash commands and the Revoke and "Open inbox" presses for one gate."""

    def __init__(self, gate: Gate, links: LinkMaker | None) -> None:
        self._gate = gate
        self._links = links

    async def run(self, command: str | None, user_id: str) -> Response:
        """The answer to the slash command ``command`` sent by ``user_id``."""
        if command == "whoami":
            known = self._gate.directory.identify("discord", user_id) is not None
            return ephemeral(whoami_text(user_id, known))
        if command == "grants":
            asker = Asker(channel="discord", user_id=user_id)
            text, rows = _listing(await list_own(self._gate, asker, limit=LIST_MAX))
            return ephemeral(text, components=rows)
        if command == "inbox":
            return await self.inbox(user_id)
        return ephemeral(_help())

    async def inbox(self, user_id: str) -> Response:
        """A single-use sign-in link for ``user_id`` (if an approver), as text and a link button."""
        told = await run_command(
            "inbox",
            directory=self._gate.directory,
            channel="discord",
            user_id=user_id,
            links=self._links,
        )
        if told.url is None or told.template is None:
            return ephemeral(escape(told.text))
        before, _, after = told.template.partition("{url}")
        text = f"{escape(before)}{told.url}{escape(after)}"
        button = {"type": BUTTON, "style": _LINK_STYLE, "label": "Open the web inbox"}
        button["url"] = told.url
        return ephemeral(
            text, components=[{"type": 1, "components": [button]}], flags=_SUPPRESS_EMBEDS
        )

    async def revoke(self, user_id: str, grant_id: str, event: str) -> Response | None:
        """A stored Revoke press, applied once per ``event``; ``None`` for a replay already applied.

        Revoked: the listing is redrawn in place (type 7) with what was revoked
        on top; anything else is told to the presser and changes nothing.
        """
        asker = Asker(channel="discord", user_id=user_id)
        done = await revoke_own(self._gate, asker, grant_id, event=event)
        if done.kind == "duplicate":
            return None
        if done.kind != "revoked":
            return ephemeral(escape(done.message))
        listing = await list_own(self._gate, asker, limit=LIST_MAX)
        text, rows = _listing(listing, before=done.message)
        return update({"content": text, "components": rows, "allowed_mentions": NO_MENTIONS})


def _listing(listing: Listing, before: str | None = None) -> tuple[str, list[Any]]:
    """The listing as a message's text and rows: heading, a line per grant, a Revoke button each."""
    lines = [escape(before)] if before else []
    lines.append(f"**{escape(listing.message)}**")
    buttons = []
    for number, item in enumerate(listing.items, start=1):
        lines.append(f"{number}\\. {escape(item.line[:_LINE_MAX])}")
        buttons.append(
            {
                "type": BUTTON,
                "style": STYLE["danger"],
                "label": f"Revoke {number}",
                "custom_id": revoke_postback_data(item.grant.id),
            }
        )
    rows = [{"type": 1, "components": buttons[i : i + 5]} for i in range(0, len(buttons), 5)]
    return "\n".join(lines)[:2000], rows


def _help() -> str:
    lines = [f"/{name}: {escape(summary)}" for name, summary in COMMANDS.items()]
    return "What you can ask tapgate here:\n" + "\n".join(lines)
