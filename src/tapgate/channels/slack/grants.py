"""``/tapgate grants`` and its Revoke buttons, on Slack.

Who may see and revoke what is :mod:`tapgate.decisions.chat_grants`; this module
only speaks Slack::

    /tapgate grants ─► core.own_grants.list_own ─► ephemeral: one section per grant,
                                                   a Revoke button each (confirm dialog)
    Revoke ─(recorded in the inbox before the ack, by SlackWebhook)─►
        core.own_grants.revoke_own ─► the listing replaced via its response_url:
                                      the sentence, then the grants still active
                                      (else an ephemeral sentence)

Every grant line is masked and clipped by core; it is escaped here as a
``plain_text`` section (Slack formats nothing there), so an argument value
like ``<!channel>`` or ``*bold*`` arrives as the characters it is.

Limits (Slack's → ours): 50 blocks per message → a heading, :data:`LIST_MAX`
grants and a footer; section ``plain_text`` 3000 → a grant line is ≤ ~250;
button ``value`` 2000 → a grant id (≤ 64); confirm text 300 → the line, clipped.
"""

from __future__ import annotations

import logging
from typing import Any

import aiohttp
from slack_sdk.webhook.async_client import AsyncWebhookClient

from tapgate.channels.slack.commands import Answer, SlashCommand
from tapgate.channels.slack.payloads import RevokeInteraction
from tapgate.channels.slack.replies import SlackReplies
from tapgate.channels.slack.text import escape
from tapgate.decisions.buttons import SLACK_REVOKE_ACTION_ID
from tapgate.decisions.chat_grants import Asker, Listing, list_own, revoke_own
from tapgate.gate.gate import Gate

__all__ = ["LIST_MAX", "SlackGrantTaps", "listing_answer"]

_log = logging.getLogger(__name__)

LIST_MAX = 20
"""Grants one listing shows (the newest); the heading says how many more there are."""
_CONFIRM_MAX = 300
SUMMARY = "list the grants you made (Always allow, Allow for session), each with a Revoke button"


def listing_answer(listing: Listing, *, lead: str | None = None) -> Answer:
    """The ephemeral listing: ``lead`` (a revoke's sentence) first, the heading, the grants."""
    text = "\n".join(part for part in (lead, listing.message) if part)
    blocks: list[dict[str, Any]] = [_section(text)]
    for item in listing.items:
        section = _section(item.line)
        section["block_id"] = f"grant:{item.grant.id}"
        section["accessory"] = {
            "type": "button",
            "action_id": SLACK_REVOKE_ACTION_ID,
            "value": item.grant.id,
            "style": "danger",
            "text": {"type": "plain_text", "text": "Revoke"},
            "confirm": {
                "title": {"type": "plain_text", "text": "Revoke this grant?"},
                "text": {
                    "type": "plain_text",
                    "text": _clip(item.line),
                },
                "confirm": {"type": "plain_text", "text": "Revoke"},
                "deny": {"type": "plain_text", "text": "Keep it"},
                "style": "danger",
            },
        }
        blocks.append(section)
    lines = [text, *(f"- {item.line}" for item in listing.items)]
    return Answer(text=escape("\n".join(lines)), blocks=blocks)


def _section(text: str) -> dict[str, Any]:
    return {
        "type": "section",
        "text": {"type": "plain_text", "text": escape(text, place="plain_text")},
    }


def _clip(text: str) -> str:
    """``text`` escaped in at most 300 characters, cut before escaping.

    Cut after escaping, ``&`` × 60 ended in ``&am…``: a broken entity Slack
    shows as typed, in the dialog that confirms which grant is revoked.
    """
    cut = text
    while len(escape(cut, place="plain_text")) > _CONFIRM_MAX - (cut != text):
        cut = cut[:-1]
    return escape(cut, place="plain_text") + ("…" if cut != text else "")


class SlackGrantTaps:
    """``/tapgate grants`` and the Revoke taps, for
    :class:`~tapgate.channels.slack.webhook.SlackWebhook`.

    ``team_id`` is the webhook's pinned workspace: a Revoke from any other is
    refused (and audited) as a stranger's.
    """

    def __init__(
        self, gate: Gate, replies: SlackReplies, *, team_id: str | None, timeout: float
    ) -> None:
        self._gate = gate
        self._replies = replies
        self._team_id = team_id
        self._timeout = timeout

    async def command(self, command: SlashCommand) -> Answer:
        """``/tapgate grants``: the asker's own active grants, newest first."""
        asker = Asker(channel="slack", user_id=command.user_id, team=command.team)
        return listing_answer(await list_own(self._gate, asker, limit=LIST_MAX))

    async def revoke(self, interaction: RevokeInteraction, event: str) -> None:
        """Apply a stored Revoke tap (once per ``event``) and answer where the listing was."""
        asker = Asker(channel="slack", user_id=interaction.user_id, team=interaction.team)
        pinned = self._team_id is not None and interaction.team != self._team_id
        done = await revoke_own(
            self._gate,
            asker,
            interaction.grant_id,
            event=event,
            refuse="another workspace" if pinned else None,
        )
        if done.kind == "duplicate":
            return
        _log.info(
            "Slack revoke of grant %s by %s: %s",
            interaction.grant_id,
            done.approver or interaction.user_id,
            done.kind,
        )
        if done.approver is not None and await self._replace(interaction, asker, done.message):
            return
        await self._replies.tell(interaction, done.message)

    async def _replace(self, interaction: RevokeInteraction, asker: Asker, lead: str) -> bool:
        """Replace the listing the button was on with ``lead`` and a fresh listing.

        A listing is an ephemeral message, which only its ``response_url`` can
        change (5 times in 30 minutes); ``False`` when that did not work.
        """
        if interaction.response_url is None:
            return False
        answer = listing_answer(await list_own(self._gate, asker, limit=LIST_MAX), lead=lead)
        # Only a signed payload carries a response_url, so it is Slack's own URL.
        webhook = AsyncWebhookClient(
            interaction.response_url,
            timeout=self._timeout,  # type: ignore[arg-type]  # handed to aiohttp as seconds
            retry_handlers=[],
        )
        try:
            sent = await webhook.send(
                text=answer.text,
                blocks=answer.blocks,
                response_type="ephemeral",
                replace_original=True,
            )
        except (aiohttp.ClientError, TimeoutError) as error:
            _log.warning("Slack response_url failed: %s", error)
            return False
        return sent.status_code == 200
