"""Check cards: real approval requests that test a setup, which can decide nothing real.

``tapgate doctor --send-test NAME`` proves the path a real request takes
(outbox, platform, webhook, decision) with a real request, so the request
is made here, in the domain, by the gate's own planning and the store's
``create_request``: one per channel NAME has, asking NAME alone, delivered on
that channel alone, for the reserved tool :data:`CHECK_TOOL`.

It cannot grant anything: the request is stored not ``grantable`` (a card
offers neither "Allow for session" nor "Always", and a tap asking for either
makes no grant: :func:`tapgate.gate.records.grant_for`), no agent can poll it
(its agent, :data:`CHECK_AGENT`, has no token), and it expires a minute after
the wait, or is withdrawn (cancelled) when the wait ends.
"""

from __future__ import annotations

import dataclasses
import secrets
from collections.abc import Sequence
from dataclasses import dataclass

from tapgate.gate.gate import Gate
from tapgate.gate.models import Request, ToolCall
from tapgate.gate.records import Asking
from tapgate.policy.engine import Policy
from tapgate.policy.rules import PolicySpec, Rule
from tapgate.store.delivery_states import DeliveryState, delivery_states

__all__ = [
    "CHECK_AGENT",
    "CHECK_TOOL",
    "SOURCE",
    "Seen",
    "ask_check_cards",
    "card_policy",
    "seen",
    "tapped_on",
    "withdraw",
]

CHECK_TOOL = "tapgate.test_card"
"""The tool a check card asks about: no agent has it, so approving it runs nothing."""
CHECK_AGENT = "tapgate-doctor"
"""The agent named on a check card; no token authenticates as it."""
SOURCE = "tapgate doctor --send-test"
"""The rule a check card shows: who asked, instead of a policy rule."""
_GRACE = 60.0


def card_policy(name: str, *, wait: float) -> Policy:
    """The policy a check card is planned with: ask ``name`` about :data:`CHECK_TOOL`.

    No reminder, and the request lives a minute past the wait, should the
    command die before withdrawing it.
    """
    timeout = wait + _GRACE
    rule = Rule(tool=CHECK_TOOL, action="ask", approvers=(name,), timeout=timeout, source=SOURCE)
    return Policy(PolicySpec(rules=(rule,), remind_every=0, remember=frozenset({"once"})))


async def ask_check_cards(gate: Gate, name: str) -> dict[str, Request]:
    """One pending, ungrantable check request per channel ``name`` has, by channel.

    ``gate`` plans with :func:`card_policy` for ``name``.
    """
    nonce = secrets.token_hex(4)
    cards: dict[str, Request] = {}
    for delivery in gate.directory.deliveries([name]):
        call = ToolCall(
            tool=CHECK_TOOL,
            agent=CHECK_AGENT,
            arguments={
                "message": f"A test card from tapgate doctor on {delivery.channel}: "
                "tap Approve or Deny. Nothing runs either way.",
                "channel": delivery.channel,
                "test": nonce,
            },
        )
        planned = gate.plan(call)
        assert isinstance(planned, Asking)  # the check policy asks, always
        request = dataclasses.replace(planned.request, grantable=False)
        created = await gate.store.create_request(request, [delivery], gate.clock.now())
        assert created.request is not None
        cards[delivery.channel] = created.request
    return cards


@dataclass(frozen=True, kw_only=True, slots=True)
class Seen:
    """The check cards as the store has them: their messages, and those decided."""

    states: dict[str, DeliveryState]
    decided: dict[str, Request]

    def done(self, ids: Sequence[str]) -> bool:
        """Every card sent and decided: nothing more to wait for."""
        sent = len(self.states) == len(ids) and all(
            s.status == "sent" for s in self.states.values()
        )
        return sent and len(self.decided) == len(ids)


async def seen(gate: Gate, ids: Sequence[str]) -> Seen:
    """Where each card's message stands (by request id), and which requests are decided."""
    wanted = list(ids)
    rows = await gate.store.run(lambda c: delivery_states(c, wanted))
    decided = await gate.store.get_requests(wanted, decided=True)
    return Seen(
        states={row.request_id: row for row in rows},
        decided={r.id: r for r in decided if not r.is_pending},
    )


async def withdraw(gate: Gate, requests: Sequence[Request]) -> None:
    """Cancel the check requests still pending: their cards show it, nobody is reminded."""
    for request in requests:
        current = await gate.get_request(request.id)
        if current.is_pending:
            await gate.cancel(request.id, by=CHECK_AGENT, reason="tapgate doctor: the wait ended")


async def tapped_on(gate: Gate, request: Request) -> str | None:
    """The channel the deciding tap came from (``web``: the inbox), from its audit line."""
    for entry in reversed(await gate.audit_log(request_id=request.id)):
        channel = entry.detail.get("channel")
        if entry.event in ("approved", "denied") and isinstance(channel, str):
            return channel
    return None
