"""What an approver may type to the bot (LINE) or ask with ``/tapgate`` (Slack), once for both.

A command is judged here, after the surface has verified the platform's
signature, so LINE's text, Slack's slash command and the cards' "Open inbox"
button cannot drift apart: each surface's dispatch (``webhooks/_line_commands``,
``webhooks/_slack_commands``) routes the word here and delivers the answer.

``inbox``: a single-use sign-in link to the web inbox (decision
0016-web-identity-from-the-chat), minted for the approver the chat has verified. The link itself
is made
by the app (it knows ``server.public_url``) through the ``links`` callable, so
core stays free of URLs and web frameworks.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from tapgate.decisions.sign_in import LINK_TTL
from tapgate.decisions.texts import NO_INBOX, NO_INBOX_FOR_STRANGERS, inbox_link_message
from tapgate.gate.directory import Directory

__all__ = [
    "INBOX_SUMMARY",
    "WEB_INBOX_PATH",
    "Command",
    "CommandAnswer",
    "LinkMaker",
    "inbox_page",
    "run_command",
]

Command = Literal["inbox"]
INBOX_SUMMARY = "a single-use link that signs you in to the web inbox"
"""The help line of ``inbox`` in Slack's ``/tapgate help`` and LINE's ``help``."""

WEB_INBOX_PATH = "/inbox"
"""Where ``tapgate serve`` serves the web inbox, under ``server.public_url``."""

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


def inbox_page(public_url: str | None, request_id: str | None = None) -> str | None:
    """The web inbox's pending page (at ``request_id``'s card), or ``None`` without a public URL.

    For a card's "Open in inbox" link: a plain page address, safe to open any
    number of times. Signed out, the page says to ask the chat for a sign-in
    link (``inbox``); nothing signs anyone in on a GET.
    """
    if public_url is None:
        return None
    page = f"{public_url.rstrip('/')}{WEB_INBOX_PATH}"
    return page if request_id is None else f"{page}#r-{request_id}"
