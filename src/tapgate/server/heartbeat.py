"""The heartbeat: the owned background task for everything that happens on time.

Each beat nudges the dispatcher so retries that are due go out even if no
event woke it; then, on the one replica that holds the heartbeat lock
(PostgreSQL; always on SQLite), it ends the LINE reasons whose window is over
(a "Deny…" with no reason typed in time is denied without one:
:mod:`tapgate.decisions.typed_reasons`), then expires overdue requests (waking their
waiters and, through the event, updating their messages), queues the
reminders that are due (each request carries its own ``remind_at``, moved on
by ``remind_every``), escalates requests nobody answered by ``escalate_at``,
replays the webhook events stored before their 200 and still unapplied (a
replica died between the ack and the apply: :mod:`tapgate.decisions.webhook_inbox`),
forgets old webhook event ids, the web inbox's long-ended links and
sessions, and review links (and their outcome claims) a day after their
request ended. Reminders and escalation are also compare-and-sets in the
store, so a lost lock mid-beat cannot double them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import timedelta

from tapgate.decisions.review_links import forget_ended
from tapgate.decisions.sign_in import SignIns
from tapgate.decisions.typed_reasons import Reasons
from tapgate.decisions.webhook_inbox import Inbox
from tapgate.delivery.dispatcher import Dispatcher
from tapgate.gate.gate import Gate

__all__ = ["Heartbeat"]

log = logging.getLogger(__name__)

EVENT_MEMORY = timedelta(days=7)
"""How long webhook event ids are remembered (LINE redelivers within hours)."""


class Heartbeat:
    """Runs :meth:`beat` every ``interval`` seconds of the gate's clock."""

    def __init__(
        self,
        gate: Gate,
        dispatcher: Dispatcher | None = None,
        *,
        interval: float = 5.0,
        inbox: Inbox | None = None,
        sign_ins: SignIns | None = None,
    ) -> None:
        self.gate = gate
        self.inbox = inbox
        self.sign_ins = sign_ins
        self.dispatcher = dispatcher
        self.interval = interval
        self._task: asyncio.Task[None] | None = None
        self._leadership = gate.leadership()
        self._reasons = Reasons(gate)

    async def start(self) -> None:
        """Start beating (idempotent)."""
        if self._task is None:
            self._task = asyncio.create_task(self._loop(), name="tapgate-heartbeat")

    async def close(self) -> None:
        """Stop beating and hand the duties to another replica."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if self._leadership is not None:
            await self._leadership.close()

    async def leads(self) -> bool:
        """True when this replica runs the timed duties (always, on SQLite)."""
        return self._leadership is None or await self._leadership.hold()

    async def beat(self) -> None:
        """One round of timed duties, on the one replica that leads them."""
        if self.dispatcher is not None:
            self.dispatcher.wake()
        if not await self.leads():
            return
        now = self.gate.clock.now()
        lapsed = await self._reasons.lapse_due()  # before expiry: a deny decided, not expired
        if lapsed:
            log.info("ended %d pending reason(s) whose window was over", lapsed)
        expired = await self.gate.expire_overdue()
        if expired:
            log.info("expired %d request(s)", len(expired))
        await self._remind()
        if self.inbox is not None:
            replayed = await self.inbox.replay()
            if replayed:
                log.warning("replayed %d stored webhook event(s)", replayed)
            await self.inbox.forget(now - EVENT_MEMORY)
        await self.gate.forget_events(now - EVENT_MEMORY)
        if self.sign_ins is not None:
            await self.sign_ins.forget()
        await forget_ended(self.gate)  # review links (email): their rows end a day after

    async def _remind(self) -> None:
        reminded = await self.gate.remind()
        for request in reminded:
            log.info("reminding approvers of request %s", request.id)
        escalated = await self.gate.escalate()
        for request in escalated:
            log.info("escalated request %s to %s", request.id, ", ".join(request.escalate_to))
        if (reminded or escalated) and self.dispatcher is not None:
            self.dispatcher.wake()  # send them now, not one beat later

    async def _loop(self) -> None:
        while True:
            await self.gate.clock.sleep(self.interval)
            try:
                await self.beat()
            except Exception:  # the heartbeat must outlive a database hiccup
                task = asyncio.current_task()
                if task is not None and task.cancelling():
                    raise  # a driver error raised while we are being stopped: stop
                log.exception("heartbeat failed")
