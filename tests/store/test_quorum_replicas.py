"""The Nth approval decides exactly once: two gates on one PostgreSQL database, racing.

Each round asks one call of quorum 2 and lets alice tap on one replica and
bob on the other at the same moment. The approvals are rows counted under the
request's row lock (decision 0015-quorum-rows), so whichever commits second sees
the first and decides: exactly one tap decides, the other is counted, and the
audit has one "approved" line. Without the lock both would count one and the
request would wait for ever; with a counter both could decide.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from tapgate.decisions.taps import Tap, TapOutcome, tap
from tapgate.gate import Approver, Directory, Gate, ToolCall
from tapgate.gate.clock import SystemClock
from tapgate.policy import Policy, PolicySpec, Rule
from tapgate.store import Store

PEOPLE = (("alice", "UA"), ("bob", "UB"), ("carol", "UC"))
POLICY = Policy(
    PolicySpec(
        rules=(
            Rule(
                tool="deploy",
                action="ask",
                approvers=("alice", "bob", "carol"),
                quorum=2,
                source="r",
            ),
        )
    )
)
DIRECTORY = Directory(
    [Approver(name=n, addresses=(("slack", uid),)) for n, uid in PEOPLE], channels=("slack",)
)


@pytest.fixture
async def replicas(pg_url: str) -> AsyncIterator[tuple[Gate, Gate]]:
    async with await Store.open(pg_url) as store_a, await Store.open(pg_url) as store_b:
        gates = [
            Gate(store=s, policy=POLICY, directory=DIRECTORY, clock=SystemClock())
            for s in (store_a, store_b)
        ]
        async with gates[0], gates[1]:
            yield gates[0], gates[1]


def approve_as(user_id: str, request_id: str) -> Tap:
    return Tap(channel="slack", user_id=user_id, action="approve", request_id=request_id)


async def test_the_nth_approval_decides_exactly_once_across_replicas(
    replicas: tuple[Gate, Gate],
) -> None:
    gate_a, gate_b = replicas
    for n in range(25):
        ticket = await gate_a.submit(ToolCall(tool="deploy", arguments={"n": n}, agent="ci"))
        request_id = ticket.request_id
        assert request_id is not None
        outcomes: tuple[TapOutcome, ...] = await asyncio.gather(
            tap(gate_a, approve_as("UA", request_id)), tap(gate_b, approve_as("UB", request_id))
        )
        assert sorted(o.kind for o in outcomes) == ["applied", "partial"], n
        request = await gate_b.get_request(request_id)
        assert request.status == "approved" and set(request.approvals) == {"alice", "bob"}
        approved = [
            e for e in await gate_a.audit_log(request_id=request_id) if e.event == "approved"
        ]
        assert len(approved) == 1


async def test_three_approvals_racing_for_a_quorum_of_two_decide_once(
    replicas: tuple[Gate, Gate],
) -> None:
    gate_a, gate_b = replicas
    for n in range(10):
        ticket = await gate_a.submit(ToolCall(tool="deploy", arguments={"n": n}, agent="ci"))
        request_id = ticket.request_id
        assert request_id is not None
        outcomes = await asyncio.gather(
            tap(gate_a, approve_as("UA", request_id)),
            tap(gate_b, approve_as("UB", request_id)),
            tap(gate_b, approve_as("UC", request_id)),
            tap(gate_a, approve_as("UA", request_id)),  # alice twice: counts once
        )
        kinds = sorted(o.kind for o in outcomes)
        assert kinds.count("applied") == 1, kinds
        assert set(kinds) <= {"applied", "partial", "counted", "already"}, kinds
        approved = [
            e for e in await gate_a.audit_log(request_id=request_id) if e.event == "approved"
        ]
        assert len(approved) == 1
