"""What an approver may type to the bot (LINE) or ask with ``/tapgate`` (Slack), once for both.

A command is judged here, after the surface has verified the platform's
signature and found who typed it, so LINE's text and Slack's slash command
cannot drift apart: the surfaces parse the platform's payload, call
:func:`run_command`, and deliver the sentence it returns.

``inbox``: a single-use sign-in link to the web inbox (DESIGN.md decision
16), minted for the approver the chat has verified. The link itself is made
by the app (it knows ``server.public_url``) through the ``links`` callable, so
core stays free of URLs and web frameworks.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from tapgate.core.directory import Directory
from tapgate.core.sign_in import LINK_TTL
from tapgate.core.tap_texts import NO_INBOX, NO_INBOX_FOR_STRANGERS, inbox_link_message

__all__ = [
    "COMMANDS",
    "Command",
    "CommandAnswer",
    "LinkMaker",
    "parse_command",
    "run_command",
]

Command = Literal["inbox"]
COMMANDS: tuple[Command, ...] = ("inbox",)

LinkMaker = Callable[[str, str], Awaitable[str | None]]
"""``(approver, via) →`` a sign-in URL, or ``None`` when the server has no public URL."""


@dataclass(frozen=True, kw_only=True, slots=True)
class CommandAnswer:
    """What to tell the sender, and the link inside it (``url``) for surfaces that mark links up.

    Slack escapes a sentence for mrkdwn, which would mangle a URL (``_``), so
    it renders ``template`` with the link in its own syntax; LINE sends ``text``.
    """

    text: str
    url: str | None = None
    template: str | None = None
    """``text`` with ``{url}`` where the link goes (when there is one)."""


def parse_command(text: str | None) -> Command | None:
    """The command ``text`` is (any case, surrounding blanks ignored), or ``None``."""
    if text is None:
        return None
    word = text.strip().casefold()
    return "inbox" if word == "inbox" else None


async def run_command(
    command: Command,
    *,
    directory: Directory,
    channel: str,
    user_id: str,
    team: str | None = None,
    links: LinkMaker | None,
) -> CommandAnswer:
    """Run ``command`` for the platform user ``user_id``; what to show them only."""
    approver = directory.identify(channel, user_id, team)
    if approver is None:
        return CommandAnswer(text=NO_INBOX_FOR_STRANGERS)
    url = None if links is None else await links(approver, channel)
    if url is None:
        return CommandAnswer(text=NO_INBOX)
    minutes = int(LINK_TTL.total_seconds() // 60)
    template = inbox_link_message("{url}", minutes)
    return CommandAnswer(text=template.replace("{url}", url), url=url, template=template)
