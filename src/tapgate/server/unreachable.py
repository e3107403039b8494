"""No request waits for nobody: requests no approver can be reached for end at once.

Two ways a request can have nobody to ask at run time (the config check
refuses the ways it can see at load):

- every message of it (or of its batch's card) failed for good: a blocked
  bot, LINE's monthly quota on the only channel (the dispatcher tells this
  module, through ``Dispatcher.on_unreachable``);
- it was created with no message to send at all (an approver without an
  address on any enabled channel).

Either way the request is ended at once by its ``on_timeout`` verdict with the
reason "no approver could be reached" (audited as an expiry by
``unreachable``), logged at WARNING, counted in ``/metrics`` and, when the
console channel is on, printed there: it is never left to time out in silence.
"""

from __future__ import annotations

import asyncio
import logging

from tapgate.delivery.notifier import Announcer
from tapgate.gate.doors import Stranding
from tapgate.gate.models import GateEvent
from tapgate.server.metrics import Metrics

__all__ = ["Unreachable"]

log = logging.getLogger(__name__)


class Unreachable:
    """Ends unreachable requests for the server; owns the small tasks it starts."""

    def __init__(self, gate: Stranding, metrics: Metrics, console: Announcer | None) -> None:
        self._gate = gate
        self._metrics = metrics
        self._console = console
        self._tasks: set[asyncio.Task[object]] = set()
        self._unsubscribe = gate.bus.subscribe(self._on_event)

    async def __call__(self, request_ids: list[str]) -> None:
        """End these requests (the dispatcher's ``on_unreachable``); decided ones stay."""
        for request in await self._gate.give_up(request_ids):
            verdict = request.on_timeout
            log.warning(
                "request %s (%s, agent %s): no approver could be reached; decided %s",
                request.id,
                request.tool,
                request.agent,
                verdict,
            )
            self._metrics.unreachable.inc()
            if self._console is not None:
                self._console.announce(
                    f"tapgate: request {request.id} ({request.tool}) could not reach any "
                    f"approver and was decided by its on_timeout verdict: {verdict}\n"
                )

    def _on_event(self, event: GateEvent) -> None:
        """A request created with no message to send at all has nobody to wait for."""
        if event.kind != "requested" or event.request.batch_id is not None:
            return  # a batch's card is queued for the batch (the dispatcher's path)
        if self._gate.directory.deliveries(event.request.approvers):
            return
        task = asyncio.get_running_loop().create_task(self([event.request.id]))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def close(self) -> None:
        """Stop listening and let the endings in flight finish."""
        self._unsubscribe()
        await asyncio.gather(*self._tasks, return_exceptions=True)
