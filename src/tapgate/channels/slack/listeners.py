"""What each Slack interaction does at its ack: stored before the 200, or a modal opened.

:class:`~tapgate.channels.slack.webhook.SlackWebhook` verifies a request and
hands it to slack-bolt, which calls one of these listeners. A listener reads
the payload, then either records what decides in the webhook inbox before
acknowledging (decision 0017-record-before-acknowledge) or, for what decides
nothing (Deny… and Reply open a modal, Edit… its form), acknowledges at once;
the work after the ack runs in tasks the webhook owns
(:class:`~tapgate.channels.slack.taps.SlackTaps`). A mixin of the webhook,
which sets the attributes declared here.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine
from typing import Any

from slack_bolt.async_app import AsyncAck
from slack_bolt.response import BoltResponse

from tapgate.channels.slack import inbox as _slack_inbox
from tapgate.channels.slack.payloads import (
    ANSWER_BLOCK,
    BatchInteraction,
    Interaction,
    RevokeInteraction,
    parse_action,
    parse_batch_action,
    parse_deny_all_submission,
    parse_deny_submission,
    parse_edit_action,
    parse_edit_submission,
    parse_reply_submission,
    parse_revoke,
)
from tapgate.channels.slack.taps import SlackTaps
from tapgate.decisions.webhook_inbox import Inbox, InboxItem

__all__ = ["BLANK_ANSWER", "UNRECORDED", "SlackListeners"]

_log = logging.getLogger("tapgate.channels.slack.webhook")  # the webhook's, as before the split

BLANK_ANSWER = "Type an answer: the agent is waiting for it."
UNRECORDED = 503
"""The listeners' own answer when the inbox could not store a tap (not bolt failing)."""
# What the inbox keeps: everything that changes state.
_Stored = Interaction | BatchInteraction | RevokeInteraction


class SlackListeners:
    """Bolt's listeners for :class:`~tapgate.channels.slack.webhook.SlackWebhook`."""

    _taps: SlackTaps
    _inbox: Inbox
    _tasks: set[asyncio.Task[None]]
    _on_reject: Callable[[str], None] | None

    async def _on_action(self, ack: AsyncAck, body: dict[str, Any]) -> BoltResponse:
        started = time.perf_counter()
        interaction = parse_action(body)
        if interaction is None:
            return self._refuse_bolt()
        if interaction.action not in ("deny", "reply"):
            return await self._record_then_ack(ack, body, interaction, started)
        response = await ack()
        ask = self._taps.ask_reason if interaction.action == "deny" else self._taps.ask_answer
        self._spawn(interaction, ask(interaction))
        return response

    async def _on_batch_action(self, ack: AsyncAck, body: dict[str, Any]) -> BoltResponse:
        started = time.perf_counter()
        interaction = parse_batch_action(body)
        if interaction is None:
            return self._refuse_bolt()
        if interaction.action != "deny_all":
            return await self._record_then_ack(ack, body, interaction, started)
        response = await ack()  # a reason first, as a single Deny
        self._spawn(interaction, self._taps.batches.ask_reason(interaction))
        return response

    async def _on_revoke(self, ack: AsyncAck, body: dict[str, Any]) -> BoltResponse:
        """A listed grant's Revoke: it changes state, so it is stored before the ack."""
        interaction = parse_revoke(body)
        if interaction is None:
            return self._refuse_bolt()
        return await self._record_then_ack(ack, body, interaction, time.perf_counter())

    async def _on_deny_all_submission(self, ack: AsyncAck, body: dict[str, Any]) -> BoltResponse:
        """The "Deny all" modal was submitted: close it at once, then deny (as a single deny)."""
        started = time.perf_counter()
        interaction = parse_deny_all_submission(body)
        if interaction is None:
            return self._refuse_bolt()
        return await self._record_then_ack(ack, body, interaction, started)

    async def _on_deny_submission(self, ack: AsyncAck, body: dict[str, Any]) -> BoltResponse:
        """The reason modal was submitted: close it at once, then deny.

        Whether the deny still applies is known only after the compare-and-set;
        a late one (decided meanwhile, expired) is told ephemerally, like a
        late tap, rather than by keeping the modal open with an error.
        """
        started = time.perf_counter()
        interaction = parse_deny_submission(body)
        if interaction is None:
            return self._refuse_bolt()
        return await self._record_then_ack(ack, body, interaction, started)

    async def _on_reply_submission(self, ack: AsyncAck, body: dict[str, Any]) -> BoltResponse:
        """A question's answer modal was submitted: a blank answer keeps it open, else answer.

        As with a deny, whether the answer still applies is known only after
        the compare-and-set, and a late one is told ephemerally.
        """
        started = time.perf_counter()
        interaction = parse_reply_submission(body)
        if interaction is None:
            return self._refuse_bolt()
        if interaction.reason is None:
            return await ack(response_action="errors", errors={ANSWER_BLOCK: BLANK_ANSWER})
        return await self._record_then_ack(ack, body, interaction, started)

    async def _on_edit_action(self, ack: AsyncAck, body: dict[str, Any]) -> BoltResponse:
        """ "Edit…" opens a modal and decides nothing: ack, then open it in an owned task."""
        interaction = parse_edit_action(body)
        if interaction is None:
            return self._refuse_bolt()
        response = await ack()
        self._spawn(interaction, self._taps.edits.open_modal(interaction))
        return response

    async def _on_edit_submission(self, ack: AsyncAck, body: dict[str, Any]) -> BoltResponse:
        """The edit modal was submitted: judged first, so a refusal stays in the modal."""
        started = time.perf_counter()
        parsed = parse_edit_submission(body)
        if parsed is None:
            return self._refuse_bolt()
        try:
            judged = await self._taps.edits.judge(*parsed)
        except Exception:  # the store failed: no 200, so Slack shows the approver an error
            _log.exception("Slack edit of %s could not be judged", parsed[0].request_id)
            return BoltResponse(status=UNRECORDED, body={"error": "could not judge the edit"})
        if isinstance(judged, dict):
            return await ack(response_action="errors", errors=judged)
        return await self._record_then_ack(ack, body, judged, started)

    async def _record_then_ack(
        self, ack: AsyncAck, body: dict[str, Any], interaction: _Stored, started: float
    ) -> BoltResponse:
        """Store the tap, then ack, then decide in an owned task (decision
        0017-record-before-acknowledge).

        No 200 goes out unless the tap is stored: a failed INSERT is a 503,
        Slack shows the tapper an error, and their next tap is a new event.
        """
        event = _slack_inbox.event_id(body)
        try:
            await self._inbox.record("slack", [(event, _slack_inbox.encode(interaction))])
        except Exception:
            _log.exception("Slack tap on %s could not be stored", interaction.request_id)
            return BoltResponse(status=UNRECORDED, body={"error": "could not record the tap"})
        response = await ack()
        self._spawn(interaction, self._taps.apply(interaction, event, started))
        return response

    def _replay(self, item: InboxItem) -> None:
        """A stored tap that was acknowledged and never applied: decide it now."""
        interaction = _slack_inbox.decode(item.payload)
        if interaction is None:
            _log.error("stored Slack tap %s cannot be read; left alone", item.event_id)
            return
        self._spawn(interaction, self._taps.apply(interaction, item.event_id, None))

    def _spawn(self, interaction: _Stored, work: Coroutine[Any, Any, None]) -> None:
        self._own(self._taps.guarded(interaction, work))

    def _own(self, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` in a task this webhook owns (awaited, then cancelled, on close)."""
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _note_reject(self, reason: str) -> None:
        if self._on_reject is not None:
            self._on_reject(reason)

    def _refuse_bolt(self) -> BoltResponse:
        _log.warning("Slack interaction refused: not a tapgate tap we can read")
        self._note_reject("payload")
        return BoltResponse(status=400, body={"error": "malformed interaction"})
