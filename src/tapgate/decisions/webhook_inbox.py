"""Record before acknowledging (decision 0017-record-before-acknowledge): the webhooks' inbox, and
its replay.

A platform that got a 200 never sends the event again (Slack), or only when
redelivery is switched on (LINE). So a webhook stores each verified event
that may decide something here *before* it answers, and applies it after:

    verified event ──record() (one INSERT, committed)──► 200 ──► apply ──► decision
                                                                  │ (same transaction)
                                                   the inbox row is deleted ◄┘

:func:`tapgate.decisions.taps.tap` remembers the event id in the decision's
transaction, and remembering it deletes the inbox row there too
(:mod:`tapgate.store.event_ids`). So a row still stored was acknowledged
and not yet applied: :meth:`Inbox.replay` hands it back to the webhook that
stored it (its *applier*), at start-up for everything received before the
process started and, from the heartbeat of the one leading replica, for rows
older than :data:`REPLAY_AFTER`. A replay of an event whose decision did
commit finds the event id remembered: a ``duplicate`` outcome, nothing done,
nothing said (the exactly-once argument is in docs/architecture.md).

What a payload means is the webhook's business: core stores and hands back
an opaque string.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta

from tapgate.gate.doors import ClockedStore
from tapgate.store.webhook_inbox import InboxItem

__all__ = ["MAX_ATTEMPTS", "REPLAY_AFTER", "Applier", "Inbox", "InboxItem"]

log = logging.getLogger(__name__)

REPLAY_AFTER = timedelta(seconds=30)
"""How old a stored event must be before the heartbeat replays it.

The webhook that stored it applies it within milliseconds; a row older than
this was left by a process that died, or its apply failed. Replaying sooner
would only race the live apply (harmlessly: one of the two is a duplicate).
"""
MAX_ATTEMPTS = 5
"""Replays of one event before it is left alone (logged), so a poison row cannot loop."""

Applier = Callable[[InboxItem], None]
"""A webhook's way back in: apply one stored event (it starts the work and returns)."""


class Inbox:
    """Stores verified webhook events before the 200 and hands unapplied ones back.

    One per app, shared by the webhooks (each registers its applier under its
    source name: ``line``, ``slack``) and the heartbeat. ``apply_delay`` is a
    test hook (seconds the webhooks wait between the 200 and applying, so a
    test can kill the process in that gap); the server refuses it outside a
    test set-up (``bot/app.py``).
    """

    def __init__(self, gate: ClockedStore, *, apply_delay: float = 0.0) -> None:
        self._gate = gate
        self.apply_delay = apply_delay
        self._appliers: dict[str, Applier] = {}

    def register(self, source: str, applier: Applier) -> None:
        """Let ``source``'s stored events be replayed through ``applier``."""
        self._appliers[source] = applier

    async def record(self, source: str, events: Sequence[tuple[str, str]]) -> None:
        """Store ``(event id, payload)`` pairs durably, in one transaction, before the 200.

        Raises whatever the store raises: the caller must then *not* answer
        200, so the platform (or the tapper) tries again.
        """
        now = self._gate.clock.now()
        items = [
            InboxItem(source=source, event_id=event_id, payload=payload, received_at=now)
            for event_id, payload in events
        ]
        await self._gate.store.inbox.record(items)

    async def before_apply(self) -> None:
        """The test hook's pause between the 200 and the apply (nothing unless configured)."""
        if self.apply_delay > 0:
            await asyncio.sleep(self.apply_delay)

    async def replay(self, *, received_before: datetime | None = None) -> int:
        """Hand each stored, unapplied event of a registered source to its applier.

        ``received_before`` defaults to :data:`REPLAY_AFTER` ago (the
        heartbeat); start-up passes the moment the process started. Returns
        how many were handed back.
        """
        before = received_before or self._gate.clock.now() - REPLAY_AFTER
        if not self._appliers:
            return 0
        due = await self._gate.store.inbox.due(
            list(self._appliers), before=before, max_attempts=MAX_ATTEMPTS
        )
        handed = 0
        for item in due:
            last = " (the last attempt)" if item.attempts + 1 >= MAX_ATTEMPTS else ""
            log.warning(
                "replaying %s event %s received at %s%s",
                item.source,
                item.event_id,
                item.received_at.isoformat(),
                last,
            )
            self._appliers[item.source](item)
            handed += 1
        return handed

    async def pending(self) -> int:
        """How many stored events wait to be applied."""
        return await self._gate.store.inbox.count()

    async def forget(self, before: datetime) -> int:
        """Drop stored events received before ``before`` (given up on, long ago)."""
        return await self._gate.store.inbox.forget(before)
