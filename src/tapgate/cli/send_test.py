"""``tapgate doctor --send-test NAME``: a real approval card on each of NAME's channels.

What it proves is the whole path a real request takes, so it makes a real
one: per channel NAME has, one pending request for the reserved tool
:data:`TEST_TOOL`, asked of NAME alone and delivered on that channel alone,
written to the store through the gate's own planning (``Gate.plan``) and
``create_request``, like any call an agent submits. The running server's
dispatcher sends it with the server's credentials (this command sends
nothing itself), and a tap comes back through the server's webhook and the
one decision path; this command only watches the store:

- **delivered**: the card's outbox row is ``sent`` (``failed``, or still
  ``pending`` with the platform's last error, says why not; a row nobody
  picked up means no ``tapgate serve`` is running on this store);
- **tapped**: the request was decided by NAME (the audit line says on which
  channel: a tap in the web inbox counts, and says so).

It cannot grant anything: the requests are stored not ``grantable`` (a card
offers neither "Allow for session" nor "Always", and a forged tap asking for
either makes no grant), no agent can poll them (their agent,
:data:`TEST_AGENT`, has no token), and each one ends with the wait: one left
pending is cancelled, so no card stays live and nothing reminds anybody.
"""

from __future__ import annotations

import asyncio
import dataclasses
import secrets
import time
from collections.abc import Sequence

from tapgate.channels.contract import CheckResult
from tapgate.errors import ConfigError
from tapgate.gate.gate import Gate
from tapgate.gate.models import Request, ToolCall
from tapgate.gate.records import Asking
from tapgate.policy.engine import Policy
from tapgate.policy.rules import PolicySpec, Rule
from tapgate.store.delivery_states import DeliveryState, delivery_states

__all__ = ["SOURCE", "TEST_AGENT", "TEST_TOOL", "card_policy", "send_test"]

TEST_TOOL = "tapgate.test_card"
"""The tool a test card asks about: no agent has it, so approving it runs nothing."""
TEST_AGENT = "tapgate-doctor"
"""The agent named on a test card; no token authenticates as it."""
SOURCE = "tapgate doctor --send-test"
"""The rule a test card shows: who asked, instead of a policy rule."""
_POLL = 0.25
_GRACE = 60.0


def card_policy(name: str, *, wait: float) -> Policy:
    """The policy a test card is planned with: ask ``name`` about :data:`TEST_TOOL`, no reminder.

    The request lives a minute past the wait, should this command die before cancelling it.
    """
    timeout = wait + _GRACE
    rule = Rule(tool=TEST_TOOL, action="ask", approvers=(name,), timeout=timeout, source=SOURCE)
    return Policy(PolicySpec(rules=(rule,), remind_every=0, remember=frozenset({"once"})))


async def send_test(gate: Gate, name: str, *, wait: float) -> list[CheckResult]:
    """Send ``name`` a test card per channel, wait up to ``wait`` seconds; one result per channel.

    ``gate`` plans with :func:`card_policy` for ``name`` over the server's directory and store.
    """
    deliveries = gate.directory.deliveries([name])
    if gate.directory.get(name) is None:
        raise ConfigError("approvers", f"no approver named {name!r}")
    if not deliveries:
        return [CheckResult(channel="", what=f"send-test {name}", ok=False, detail="no channel")]
    nonce = secrets.token_hex(4)
    cards: dict[str, Request] = {}
    for delivery in deliveries:
        call = ToolCall(
            tool=TEST_TOOL,
            agent=TEST_AGENT,
            arguments={
                "message": f"A test card from tapgate doctor on {delivery.channel}: "
                "tap Approve or Deny. Nothing runs either way.",
                "channel": delivery.channel,
                "test": nonce,
            },
        )
        planned = gate.plan(call)
        assert isinstance(planned, Asking)  # the test policy asks, always
        request = dataclasses.replace(planned.request, grantable=False)
        created = await gate.store.create_request(request, [delivery], gate.clock.now())
        assert created.request is not None
        cards[delivery.channel] = created.request
    try:
        states, decided = await _watch(gate, cards, wait)
    finally:
        await _withdraw(gate, list(cards.values()))
    return [
        await _report(
            gate,
            channel,
            request,
            state=states.get(request.id),
            decided=decided.get(request.id),
            wait=wait,
        )
        for channel, request in cards.items()
    ]


async def _watch(
    gate: Gate, cards: dict[str, Request], wait: float
) -> tuple[dict[str, DeliveryState], dict[str, Request]]:
    """Poll the store until every card is sent and decided, or ``wait`` seconds pass."""
    ids = [r.id for r in cards.values()]
    deadline = time.monotonic() + wait
    while True:
        rows = await gate.store.run(lambda c: delivery_states(c, ids))
        states = {row.request_id: row for row in rows}
        decided = {
            r.id: r for r in await gate.store.get_requests(ids, decided=True) if not r.is_pending
        }
        done = all(s.status == "sent" for s in states.values()) and len(decided) == len(ids)
        if done or time.monotonic() >= deadline:
            return states, decided
        await asyncio.sleep(_POLL)


async def _withdraw(gate: Gate, requests: Sequence[Request]) -> None:
    """Cancel the test requests still pending: their cards show it, nobody is reminded."""
    for request in requests:
        current = await gate.get_request(request.id)
        if current.is_pending:
            await gate.cancel(request.id, by=TEST_AGENT, reason="tapgate doctor: the wait ended")


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
    if decided is None or decided.status == "cancelled":
        detail = f"delivered; not tapped within {wait:g}s"
        return CheckResult(channel=channel, what=what, ok=False, detail=detail)
    where = await _tapped_on(gate, decided)
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


async def _tapped_on(gate: Gate, request: Request) -> str | None:
    """The channel the deciding tap came from (``web``: the inbox), from its audit line."""
    for entry in reversed(await gate.audit_log(request_id=request.id)):
        channel = entry.detail.get("channel") if isinstance(entry.detail, dict) else None
        if entry.event in ("approved", "denied") and isinstance(channel, str):
            return channel
    return None
