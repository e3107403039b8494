"""``tapgate doctor --send-test NAME``: a real approval card on each of NAME's channels.

The cards are real requests (:mod:`tapgate.decisions.check_cards`: made by
the gate's own planning, ungrantable, for the reserved tool
``tapgate.test_card``) that the running server's dispatcher sends with the
server's credentials (this command sends nothing itself) and whose taps come
back through the server's webhook and the one decision path. This command
watches the store and reports, per channel:

- **delivered**: the card's outbox row is ``sent`` (``failed``, or still
  ``pending`` with the platform's last error, says why not; a row nobody
  picked up means no ``tapgate serve`` is running on this store);
- **tapped**: the request was decided by NAME (the audit line says on which
  channel: a tap in the web inbox counts, and says so).

When the wait ends, the cards still pending are withdrawn.
"""

from __future__ import annotations

import asyncio
import time

from tapgate.channels.contract import CheckResult
from tapgate.decisions.check_cards import (
    CHECK_TOOL,
    Seen,
    ask_check_cards,
    seen,
    tapped_on,
    withdraw,
)
from tapgate.errors import ConfigError
from tapgate.gate.gate import Gate
from tapgate.gate.models import Request
from tapgate.store.delivery_states import DeliveryState

__all__ = ["TEST_TOOL", "send_test"]

TEST_TOOL = CHECK_TOOL
_POLL = 0.25


async def send_test(gate: Gate, name: str, *, wait: float) -> list[CheckResult]:
    """Send ``name`` a test card per channel, wait up to ``wait`` seconds; one result per channel.

    ``gate`` plans with :func:`~tapgate.decisions.check_cards.card_policy` for ``name``
    over the server's directory and store.
    """
    if gate.directory.get(name) is None:
        raise ConfigError("approvers", f"no approver named {name!r}")
    cards = await ask_check_cards(gate, name)
    if not cards:
        return [CheckResult(channel="", what=f"send-test to {name}", ok=False, detail="no channel")]
    try:
        found = await _watch(gate, [r.id for r in cards.values()], wait)
    finally:
        await withdraw(gate, list(cards.values()))
    return [
        await _report(
            gate,
            channel,
            request,
            state=found.states.get(request.id),
            decided=found.decided.get(request.id),
            wait=wait,
        )
        for channel, request in cards.items()
    ]


async def _watch(gate: Gate, ids: list[str], wait: float) -> Seen:
    """Poll the store until every card is sent and decided, or ``wait`` seconds pass."""
    deadline = time.monotonic() + wait
    while True:
        found = await seen(gate, ids)
        if found.done(ids) or time.monotonic() >= deadline:
            return found
        await asyncio.sleep(_POLL)


async def _report(
    gate: Gate,
    channel: str,
    request: Request,
    *,
    state: DeliveryState | None,
    decided: Request | None,
    wait: float,
) -> CheckResult:
    what = f"send-test to {', '.join(request.approvers)}"
    if state is None or state.status != "sent":
        return CheckResult(channel=channel, what=what, ok=False, detail=_not_sent(state, wait))
    if decided is None or decided.status not in ("approved", "denied"):
        detail = f"delivered; not tapped within {wait:g}s"
        return CheckResult(channel=channel, what=what, ok=False, detail=detail)
    where = await tapped_on(gate, decided)
    on = "" if where in (None, channel) else f" (tapped on {where}, not on {channel})"
    detail = f"delivered; tapped: {decided.status} by {decided.resolved_by}{on}"
    return CheckResult(channel=channel, what=what, ok=True, detail=detail)


def _not_sent(state: DeliveryState | None, wait: float) -> str:
    if state is None or (state.status == "pending" and state.attempts == 0):
        return (
            f"not delivered within {wait:g}s: nobody picked the card up "
            "(is `tapgate serve` running on this store?)"
        )
    error = state.last_error or "no error recorded"
    if state.status == "failed":
        return f"not delivered: {error}"
    return f"not delivered within {wait:g}s; after {state.attempts} attempt(s): {error}"
