"""The heartbeat: expiry on time, one reminder, a nudge for the dispatcher, old links forgotten."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta

from tapgate.decisions.review_links import ReviewLinks
from tapgate.delivery import Dispatcher, RecordingNotifier
from tapgate.gate import Approver, Directory, Gate, ToolCall
from tapgate.gate.clock import ManualClock
from tapgate.policy import Policy, PolicySpec, Rule
from tapgate.server.heartbeat import Heartbeat
from tapgate.store import Store

POLICY = Policy(
    PolicySpec(
        rules=(Rule(tool="deploy", action="ask", timeout=600, source="r"),), remind_every=300
    )
)
DIRECTORY = Directory([Approver(name="alice", addresses=(("slack", "UA"),))], ("slack",))


async def test_beat_expires_reminds_on_time_and_updates(store: Store, clock: ManualClock) -> None:
    gate = Gate(store=store, policy=POLICY, directory=DIRECTORY, clock=clock)
    slack = RecordingNotifier("slack")
    dispatcher = Dispatcher(store, [slack], clock=clock, bus=gate.bus)
    heartbeat = Heartbeat(gate, dispatcher, interval=5)
    ticket = await gate.submit(ToolCall(tool="deploy", agent="ci"))
    await dispatcher.run_once()
    assert len(slack.sends) == 1
    clock.advance(301)
    await heartbeat.beat()
    await dispatcher.run_once()
    assert len(slack.sends) == 2  # the reminder
    clock.advance(60)
    await heartbeat.beat()
    await dispatcher.run_once()
    assert len(slack.sends) == 2  # not before the next 300 s
    clock.advance(300)
    await heartbeat.beat()  # past the 600 s deadline
    assert (await gate.get_request(ticket.request_id or "")).status == "expired"
    await dispatcher.run_once()
    assert {u.request.status for u in slack.updates} == {"expired"}
    assert len(slack.updates) == 2  # the request message and the reminder
    await dispatcher.close()
    await heartbeat.close()


async def test_heartbeat_runs_on_its_clock(store: Store, clock: ManualClock) -> None:
    gate = Gate(store=store, policy=POLICY, directory=DIRECTORY, clock=clock)
    ticket = await gate.submit(ToolCall(tool="deploy", agent="ci"))
    heartbeat = Heartbeat(gate, interval=5)
    await heartbeat.start()
    while clock.sleepers == 0:  # the heartbeat task is parked on its clock
        await asyncio.sleep(0)
    clock.advance(601)  # past the deadline, and past the heartbeat's next beat
    for _ in range(200):
        if (await gate.get_request(ticket.request_id or "")).status == "expired":
            break
        await asyncio.sleep(0.01)
    await heartbeat.close()
    assert (await gate.get_request(ticket.request_id or "")).status == "expired"


async def test_a_reminder_goes_out_in_the_beat_that_queued_it(
    store: Store, clock: ManualClock
) -> None:
    gate = Gate(store=store, policy=POLICY, directory=DIRECTORY, clock=clock)
    slack = RecordingNotifier("slack")
    dispatcher = Dispatcher(store, [slack], clock=clock, bus=gate.bus, idle=3600)
    heartbeat = Heartbeat(gate, dispatcher, interval=5)
    await gate.submit(ToolCall(tool="deploy", agent="ci"))
    await dispatcher.start()
    await slack.wait_for_sends(1)
    clock.advance(301)
    await heartbeat.beat()
    await asyncio.wait_for(slack.wait_for_sends(2), 5)  # no second beat needed
    await dispatcher.close()
    await heartbeat.close()


async def test_a_beat_forgets_review_links_a_day_after_they_ended(
    store: Store, clock: ManualClock
) -> None:
    gate = Gate(store=store, policy=POLICY, directory=DIRECTORY, clock=clock)
    links = ReviewLinks(gate, channel="email")
    ends = clock.now() + timedelta(minutes=10)

    async def mint(subject: str, expires_at: datetime) -> str:
        minted = await links.mint(
            subject,
            batch=False,
            approver="alice",
            address="a@x.test",
            key=subject,
            expires_at=expires_at,
        )
        return minted.token

    ended = await mint("r-ended", ends)
    later = await mint("r-later", ends + timedelta(hours=2))
    heartbeat = Heartbeat(gate, interval=5)
    clock.advance(timedelta(minutes=10, days=1, seconds=1).total_seconds())
    await heartbeat.beat()
    assert await links.open(ended) is None  # its row is gone
    kept = await links.open(later)  # ended too, but less than a day ago: still says so
    assert kept is not None and kept.state == "expired"
    await heartbeat.close()
