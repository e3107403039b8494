"""Closing the dispatcher while a message waits its pacing turn."""

from __future__ import annotations

import asyncio

from tapgate.delivery.dispatcher import Dispatcher
from tapgate.delivery.recording import RecordingNotifier
from tapgate.gate.clock import ManualClock
from tapgate.gate.directory import Approver, Directory
from tapgate.gate.gate import Gate
from tapgate.gate.models import ToolCall
from tapgate.policy.engine import Policy
from tapgate.policy.rules import PolicySpec, Rule
from tapgate.store import Store
from tests.tables import outbox_rows

POLICY = Policy(PolicySpec(rules=(Rule(tool="deploy", action="ask", source="policy.rules[0]"),)))
DIRECTORY = Directory([Approver(name="alice", addresses=(("slack", "UA"),))], ("slack",))


async def test_close_gives_back_a_row_waiting_for_its_pacing_turn(
    store: Store, clock: ManualClock
) -> None:
    """The wait is on the dispatcher's clock, which at close may never move again.

    Close must not sit out its grace period on it: the row goes back to the
    outbox untried, due when its turn would have come, so the next dispatcher
    sends it then rather than after the lease runs out.
    """
    gate = Gate(store=store, policy=POLICY, directory=DIRECTORY, clock=clock)
    first = await gate.submit(ToolCall(tool="deploy", arguments={"n": 1}, agent="ci"))
    second = await gate.submit(ToolCall(tool="deploy", arguments={"n": 2}, agent="ci"))
    slack = RecordingNotifier("slack")
    d = Dispatcher(store, [slack], clock=clock, pace={"slack": 2.0}, idle=3600)
    await d.start()
    await slack.wait_for_sends(1)
    while clock.sleepers == 0:  # the second message is parked on its pacing turn
        await asyncio.sleep(0.005)
    # The grace period is far longer than the test's own timeout: it must not be spent.
    await asyncio.wait_for(d.close(grace=3600), timeout=30)
    assert [s.request.id for s in slack.sends] == [first.request_id]
    [row] = await outbox_rows(store, second.request_id or "")
    assert (row.status, row.attempts) == ("pending", 0)  # given back, not an attempt

    later = RecordingNotifier("slack")
    again = Dispatcher(store, [later], clock=clock, pace={"slack": 2.0})
    assert await again.run_once() == 0  # not before its turn
    clock.advance(2)
    assert await again.run_once() == 1
    assert [s.request.id for s in later.sends] == [second.request_id]
    await again.close()
