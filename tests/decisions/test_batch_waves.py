"""One "Approve all" is one wave: one decision number, one card version, one consumption.

The batch path bumps the decision counter and the batch's ``version`` once
per transaction rather than once per member, and the answering long-poll
consumes every approval in one transaction (docs/benchmarks.md): these pin
that nothing per member was lost on the way (own compare-and-set, own audit
line, each approval consumed exactly once).
"""

from __future__ import annotations

import asyncio

from sqlalchemy import select

from tapgate.store.schema import batches
from tests.decisions.test_batch_cards import (  # the fixtures and helpers of the batch cards' tests
    Served,
    db_url,  # noqa: F401  # a fixture, used by ``served``
    served,  # noqa: F401  # a fixture
    statuses,
)
from tests.fakes.served import ALICE


async def test_approve_all_is_one_wave_with_every_member_its_own(
    served: Served,  # noqa: F811  # the fixture imported above
) -> None:
    calls = [{"tool": "deploy", "arguments": {"n": n}} for n in range(20)]
    body = await served.submit(calls)
    batch_id, asks = body["id"], [c["id"] for c in body["calls"]]
    await served.cards_sent(2)
    poll = asyncio.create_task(served.poll(batch_id))
    told = await served.line_tap(f"v=1&a=approve_all&b={batch_id}", ALICE)
    assert "20 approved" in told
    polled = await asyncio.wait_for(poll, 10)
    assert [c["decision"] for c in polled["calls"]] == ["allow"] * 20
    decided = await statuses(served, asks)
    assert len({r.decided_seq for r in decided}) == 1  # one transaction, one number
    assert all(r.consumed_at is not None for r in decided)  # the long-poll told of each
    for request in decided:
        lines = await served.gate.audit_log(request_id=request.id)
        assert [e.event for e in lines].count("approved") == 1
    query = select(batches.c.version).where(batches.c.id == batch_id)
    version = await served.gate.store.runner.read(lambda c: c.execute(query).scalar_one())
    assert version == 1  # the cards are stale once, for the whole wave
