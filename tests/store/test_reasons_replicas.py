"""A pending LINE reason is ended once, whichever replicas race to end it (PostgreSQL).

Two gates share one PostgreSQL database, each with its own clock, as two
replicas behind a load balancer. alice taps "Deny…" on one; then the typed
text reaches one replica while the other's heartbeat finds the window over
(their clocks straddle the deadline), or both heartbeats end it at once.
The row's compare-and-set decides whether the deny carries the text, and the
decision's event id (one per row) makes it one decision: one "denied" audit
line, no refusal, and the agent reads what the winner decided.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from tapgate.decisions.taps import Tap
from tapgate.decisions.typed_reasons import Reasons
from tapgate.gate import Approver, Directory, Gate, ToolCall
from tapgate.gate.clock import ManualClock
from tapgate.policy import Policy, PolicySpec, Rule
from tapgate.store import Store

WINDOW = 60.0
POLICY = Policy(
    PolicySpec(rules=(Rule(tool="deploy", action="ask", approvers=("alice", "bob"), source="r"),))
)
DIRECTORY = Directory(
    [Approver(name=n, addresses=(("line", uid),)) for n, uid in (("alice", "UA"), ("bob", "UB"))],
    channels=("line",),
)


@pytest.fixture
async def replicas(pg_url: str) -> AsyncIterator[tuple[Gate, Gate]]:
    clock_a, clock_b = ManualClock(), ManualClock()
    async with await Store.open(pg_url) as store_a, await Store.open(pg_url) as store_b:
        gate_a = Gate(store=store_a, policy=POLICY, directory=DIRECTORY, clock=clock_a)
        gate_b = Gate(store=store_b, policy=POLICY, directory=DIRECTORY, clock=clock_b)
        async with gate_a, gate_b:
            yield gate_a, gate_b


async def denied_lines(gate: Gate, request_id: str) -> list[str | None]:
    audit = await gate.audit_log(request_id=request_id)
    assert not [e for e in audit if e.event == "refused"]
    return [e.detail.get("reason") for e in audit if e.event == "denied"]


async def test_text_on_one_replica_and_the_window_on_another_decide_once(
    replicas: tuple[Gate, Gate],
) -> None:
    gate_a, gate_b = replicas
    live, heartbeat = Reasons(gate_a, window=WINDOW), Reasons(gate_b, window=WINDOW)
    for n in range(20):
        ticket = await gate_a.submit(ToolCall(tool="deploy", arguments={"n": n}, agent="ci"))
        assert ticket.request_id is not None
        deny = Tap(channel="line", user_id="UA", action="deny", request_id=ticket.request_id)
        assert await live.ask(deny, event=f"tap-{n}") is not None
        # The replicas' clocks straddle the deadline: A still takes text, B sees it over.
        for gate, ahead in ((gate_a, WINDOW - 0.5), (gate_b, WINDOW + 0.5)):
            assert isinstance(gate.clock, ManualClock)
            gate.clock.advance(ahead)
        said, _ = await asyncio.gather(
            live.typed(user_id="UA", text=f"reason {n}", event=f"text-{n}"),
            heartbeat.lapse_due(),
        )
        await heartbeat.lapse_due()  # whatever is left (nothing) is ended, not decided again
        reasons = await denied_lines(gate_a, ticket.request_id)
        assert reasons in ([f"reason {n}"], [None]), n
        request = await gate_b.get_request(ticket.request_id)
        assert (request.status, request.resolution_reason) == ("denied", reasons[0])
        if said:  # the text's replica told alice what happened, truthfully
            assert said.startswith("Denied - deploy"), said
            assert (f": reason {n}" in said) == (reasons == [f"reason {n}"])
        assert isinstance(gate_a.clock, ManualClock)
        gate_a.clock.advance(1)  # the clocks agree again for the next round


async def test_two_heartbeats_ending_the_same_window_decide_once(
    replicas: tuple[Gate, Gate],
) -> None:
    gate_a, gate_b = replicas
    asking = Reasons(gate_a, window=WINDOW)
    for n in range(20):
        ticket = await gate_a.submit(ToolCall(tool="deploy", arguments={"m": n}, agent="ci"))
        assert ticket.request_id is not None
        deny = Tap(channel="line", user_id="UA", action="deny", request_id=ticket.request_id)
        await asking.ask(deny, event=f"tap2-{n}")
        for gate in (gate_a, gate_b):
            assert isinstance(gate.clock, ManualClock)
            gate.clock.advance(WINDOW + 1)
        await asyncio.gather(Reasons(gate_a).lapse_due(), Reasons(gate_b).lapse_due())
        assert await denied_lines(gate_a, ticket.request_id) == [None], n
