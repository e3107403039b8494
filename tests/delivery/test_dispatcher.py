"""The outbox dispatcher: durable delivery, retries, permanent failures, updates, pacing."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest

from tapgate.delivery.dispatcher import Dispatcher
from tapgate.delivery.notifier import Receipt
from tapgate.delivery.recording import RecordingNotifier
from tapgate.errors import DeliveryError, PermanentDeliveryError
from tapgate.gate.clock import ManualClock
from tapgate.gate.directory import Approver, Directory
from tapgate.gate.gate import Gate
from tapgate.gate.models import Delivery, GateEvent, Request, ToolCall
from tapgate.policy.engine import Policy
from tapgate.policy.rules import PolicySpec, Rule
from tapgate.store import Store
from tests.tables import outbox_rows

POLICY = Policy(PolicySpec(rules=(Rule(tool="deploy", action="ask", source="policy.rules[0]"),)))
DIRECTORY = Directory(
    [
        Approver(name="alice", addresses=(("slack", "UA"), ("line", "LA"))),
        Approver(name="bob", addresses=(("slack", "UB"),)),
    ],
    channels=("slack", "line"),
)


def call(n: int = 0) -> ToolCall:
    return ToolCall(tool="deploy", arguments={"build": n}, agent="ci")


def fixed_backoff(attempts: int, *, retry_after: float | None = None) -> float:
    return max(10.0 * attempts, retry_after or 0.0)


@pytest.fixture
def slack() -> RecordingNotifier:
    return RecordingNotifier("slack")


@pytest.fixture
def line() -> RecordingNotifier:
    return RecordingNotifier("line")


@pytest.fixture
async def gate(store: Store, clock: ManualClock) -> AsyncIterator[Gate]:
    async with Gate(store=store, policy=POLICY, directory=DIRECTORY, clock=clock) as g:
        yield g


def dispatcher(
    store: Store, clock: ManualClock, *notifiers: RecordingNotifier, **kw: object
) -> Dispatcher:
    return Dispatcher(store, notifiers, clock=clock, backoff=fixed_backoff, **kw)  # type: ignore[arg-type]


async def test_one_message_per_approver_and_channel(
    gate: Gate,
    store: Store,
    clock: ManualClock,
    slack: RecordingNotifier,
    line: RecordingNotifier,
) -> None:
    events: list[GateEvent] = []
    gate.bus.subscribe(events.append)
    async with Dispatcher(store, [slack, line], clock=clock, bus=gate.bus):
        ticket = await gate.submit(call())
        await slack.wait_for_sends(2)
        await line.wait_for_sends(1)
    # Leaving the block let the pass in flight finish: every outcome is recorded.
    assert sorted(s.delivery.address for s in slack.sends) == ["UA", "UB"]
    assert [s.delivery.address for s in line.sends] == ["LA"]
    assert all(s.request.id == ticket.request_id for s in slack.sends + line.sends)
    rows = await outbox_rows(store, ticket.request_id or "")
    assert {r.status for r in rows} == {"sent"}
    assert sum(e.kind == "notified" for e in events) == 3
    assert slack.closed and line.closed  # the dispatcher owns its notifiers


async def test_transient_failure_is_retried_later_and_delivered_once(
    gate: Gate, store: Store, clock: ManualClock, slack: RecordingNotifier
) -> None:
    slack.fail_next(
        DeliveryError("503 from Slack", status=503),
        DeliveryError("rate limited", status=429, retry_after=45),
    )
    d = dispatcher(store, clock, slack)
    ticket = await gate.submit(ToolCall(tool="deploy", arguments={}, agent="solo"))
    assert await d.run_once() == 2  # alice + bob on slack (no line notifier here)
    assert slack.sends == []  # both attempts failed
    assert await d.run_once() == 0  # nothing is due yet
    clock.advance(10)
    assert await d.run_once() == 1  # the 503 row: backoff 10 s after attempt 1
    clock.advance(35)
    assert await d.run_once() == 1  # the 429 row honoured Retry-After (45 s)
    assert sorted(s.delivery.address for s in slack.sends) == ["UA", "UB"]
    rows = [r for r in await outbox_rows(store, ticket.request_id or "") if r.channel == "slack"]
    assert sorted(r.attempts for r in rows) == [2, 2]
    # A first attempt is not a retry; the second tells the notifier to look first.
    assert [c.retried for c in slack.calls] == [False, False, True, True]
    await d.close()


async def test_permanent_failure_is_recorded_and_other_channels_still_deliver(
    gate: Gate,
    store: Store,
    clock: ManualClock,
    slack: RecordingNotifier,
    line: RecordingNotifier,
    caplog: pytest.LogCaptureFixture,
) -> None:
    line.fail_next(PermanentDeliveryError("You have reached your monthly limit.", status=429))
    d = dispatcher(store, clock, slack, line)
    ticket = await gate.submit(call())
    await d.run_once()
    clock.advance(3600)
    await d.run_once()
    assert len(line.calls) == 1  # never retried
    assert sorted(s.delivery.address for s in slack.sends) == ["UA", "UB"]
    [failed] = [r for r in await outbox_rows(store, ticket.request_id or "") if r.channel == "line"]
    assert (failed.status, failed.last_error) == ("failed", "You have reached your monthly limit.")
    assert sum("giving up" in r.message for r in caplog.records) == 1
    await d.close()


async def test_committed_request_is_sent_after_a_crash(
    db_url: str, clock: ManualClock, slack: RecordingNotifier
) -> None:
    # Process 1 commits the request and "dies" before any push.
    async with await Store.open(db_url) as store1:
        gate1 = Gate(store=store1, policy=POLICY, directory=DIRECTORY, clock=clock)
        ticket = await gate1.submit(call())
    # Process 2 starts on the same database and delivers.
    async with await Store.open(db_url) as store2:
        d = dispatcher(store2, clock, slack)
        await d.run_once()
        await d.close()
    assert sorted(s.delivery.address for s in slack.sends) == ["UA", "UB"]
    assert {s.request.id for s in slack.sends} == {ticket.request_id}


async def test_rows_another_process_wrote_are_sent_by_the_idle_pass(
    db_url: str, clock: ManualClock, slack: RecordingNotifier
) -> None:
    """No event crosses processes (``tapgate doctor --send-test`` writes its cards from
    its own): the dispatcher's pass every ``idle`` seconds finds them, and nothing sooner."""
    async with await Store.open(db_url) as serving, await Store.open(db_url) as other:
        counter = CountingOutbox(serving)
        async with Dispatcher(serving, [slack], clock=clock, idle=5):
            await counter.parked()  # the first pass found nothing and sleeps until the net
            writer = Gate(store=other, policy=POLICY, directory=DIRECTORY, clock=clock)
            ticket = await writer.submit(call())
            clock.advance(4.9)
            await asyncio.sleep(0.1)
            assert slack.calls == []
            clock.advance(0.1)
            await slack.wait_for_sends(2)
    assert {s.request.id for s in slack.sends} == {ticket.request_id}


async def test_a_dispatcher_that_dies_mid_send_is_taken_over_after_its_lease(
    gate: Gate, store: Store, clock: ManualClock, slack: RecordingNotifier
) -> None:
    await gate.submit(call())
    dead = await store.outbox.claim(clock.now(), owner="dead", lease=60, channels=["slack"])
    assert len(dead) == 2
    d = dispatcher(store, clock, slack)
    assert await d.run_once() == 0  # still leased by the dead one
    clock.advance(60)
    assert await d.run_once() == 2
    assert len(slack.sends) == 2
    await d.close()


async def test_decision_updates_every_sent_message(
    gate: Gate,
    store: Store,
    clock: ManualClock,
    slack: RecordingNotifier,
    line: RecordingNotifier,
) -> None:
    d = dispatcher(store, clock, slack, line)
    ticket = await gate.submit(call())
    await d.run_once()
    await gate.resolve(ticket.request_id or "", "approve", by="bob")
    await d.run_once()
    assert sorted(u.receipt.address for u in slack.updates) == ["UA", "UB"]
    assert all(u.request.status == "approved" for u in slack.updates + line.updates)
    assert [u.receipt.ref for u in slack.updates] != []
    await d.run_once()  # each message is updated once
    assert len(slack.updates) == 2
    await d.close()


async def sent_then_cancelled(gate: Gate, d: Dispatcher) -> str:
    """A request whose messages are out, then cancelled: each message needs an update."""
    ticket = await gate.submit(ToolCall(tool="deploy", arguments={}, agent="x"))
    await d.run_once()
    await gate.cancel(ticket.request_id or "", by="x")
    return ticket.request_id or ""


async def test_failed_update_is_retried_then_abandoned(
    gate: Gate, store: Store, clock: ManualClock, slack: RecordingNotifier
) -> None:
    d = dispatcher(store, clock, slack)
    request_id = await sent_then_cancelled(gate, d)
    slack.fail_next_update(*(DeliveryError("timeout") for _ in range(30)))
    for _ in range(12):
        await d.run_once()
        clock.advance(3600)  # past any backoff
    rows = await outbox_rows(store, request_id)
    assert all(r.updated_status is None for r in rows)  # never shown, but bounded
    slack_rows = [r for r in rows if r.channel == "slack"]
    assert [r.update_attempts for r in slack_rows] == [10, 10]
    assert len(slack.updates) == 0
    await d.close()


async def test_a_failed_update_waits_for_its_backoff_and_retry_after(
    gate: Gate, store: Store, clock: ManualClock, slack: RecordingNotifier
) -> None:
    """A Slack outage or a long Retry-After must not burn every attempt at once."""
    d = dispatcher(store, clock, slack)
    await sent_then_cancelled(gate, d)
    slack.fail_next_update(
        DeliveryError("503", status=503),  # alice's: backoff 10 s (attempt 1)
        DeliveryError("429", status=429, retry_after=120),  # bob's: Slack says 2 minutes
    )
    assert await d.run_once() == 0  # both failed: no work done, no spin
    for _ in range(3):
        assert await d.run_once() == 0  # nothing due yet
    assert await store.outbox.next_due(["slack"]) == clock.now() + timedelta(seconds=10)
    clock.advance(10)
    assert await d.run_once() == 1  # the 503 one, on time
    clock.advance(100)
    assert await d.run_once() == 0
    clock.advance(10)
    assert await d.run_once() == 1  # the 429 one, after its Retry-After
    assert len(slack.updates) == 2
    await d.close()


async def test_an_unexpected_update_error_is_counted_like_a_failure(
    gate: Gate, store: Store, clock: ManualClock, slack: RecordingNotifier
) -> None:
    d = dispatcher(store, clock, slack)
    request_id = await sent_then_cancelled(gate, d)
    original = slack.update

    async def broken(*args: object, **kw: object) -> None:
        raise RuntimeError("a notifier bug")

    slack.update = broken  # type: ignore[method-assign]
    assert await d.run_once() == 0  # the pass survives it
    rows = await outbox_rows(store, request_id)
    slack_rows = [r for r in rows if r.channel == "slack"]
    assert [r.update_attempts for r in slack_rows] == [1, 1]
    slack.update = original  # type: ignore[method-assign]
    clock.advance(3600)
    assert await d.run_once() == 2
    await d.close()


async def test_pacing_spaces_messages_to_one_destination(
    store: Store, clock: ManualClock, slack: RecordingNotifier
) -> None:
    sent_at: list[float] = []
    start = clock.now()
    original = slack.send

    async def timed_send(
        request: Request, delivery: Delivery, *, key: str, retried: bool = False
    ) -> Receipt:
        sent_at.append((clock.now() - start).total_seconds())
        return await original(request, delivery, key=key, retried=retried)

    slack.send = timed_send  # type: ignore[method-assign]
    directory = Directory([Approver(name="alice", addresses=(("slack", "UA"),))], ("slack",))
    gate = Gate(store=store, policy=POLICY, directory=directory, clock=clock)
    for n in range(5):
        await gate.submit(call(n))
    d = dispatcher(store, clock, slack, pace={"slack": 2.0})
    running = asyncio.create_task(d.run_once())
    while not running.done():
        await asyncio.sleep(0.01)
        clock.advance(0.5)
    await running
    assert len(sent_at) == 5
    gaps = [b - a for a, b in itertools.pairwise(sent_at)]
    assert all(gap >= 2.0 for gap in gaps), sent_at
    await d.close()


class CountingOutbox:
    """Records the dispatcher's outbox calls as they complete, passing each to the real store."""

    def __init__(self, store: Store) -> None:
        self.calls: list[str] = []
        outbox = store.outbox
        for name in ("claim", "stale", "next_due"):
            original = getattr(outbox, name)

            async def counted(*args: Any, _name: str = name, _fn: Any = original, **kw: Any) -> Any:
                result = await _fn(*args, **kw)
                self.calls.append(_name)
                return result

            setattr(outbox, name, counted)

    async def parked(self) -> int:
        """Wait for a completed ``next_due``: the pass is over and the loop is asleep."""
        while "next_due" not in self.calls:
            await asyncio.sleep(0.005)
        return len(self.calls)


async def _decide_while_running(
    gate: Gate, store: Store, clock: ManualClock, notifier: RecordingNotifier, messages: int
) -> list[str]:
    """Send 10 requests' messages, then decide them all with the dispatcher asleep.

    Returns the outbox calls the decisions caused.
    """
    tickets = [await gate.submit(call(n)) for n in range(10)]
    counter = CountingOutbox(store)
    d = Dispatcher(store, [notifier], clock=clock, bus=gate.bus, idle=3600)
    await d.start()
    await notifier.wait_for_sends(messages)
    before = await counter.parked()
    for ticket in tickets:
        await gate.resolve(ticket.request_id or "", "approve", by="alice")
        await asyncio.sleep(0.01)
    for _ in range(20):
        await asyncio.sleep(0.01)
    await d.close()
    return counter.calls[before:]


async def test_decisions_cost_nothing_when_no_notifier_edits(
    gate: Gate, store: Store, clock: ManualClock
) -> None:
    line = RecordingNotifier("line", edits_messages=False)
    calls = await _decide_while_running(gate, store, clock, line, messages=10)  # alice
    assert calls == [], calls[:12]  # a decision on LINE alone: no claim, no stale read, no next_due


async def test_decisions_wake_only_the_update_pass(
    gate: Gate, store: Store, clock: ManualClock, slack: RecordingNotifier
) -> None:
    calls = await _decide_while_running(gate, store, clock, slack, messages=20)  # alice, bob
    assert len(slack.updates) == 20  # every message still shows its decision
    assert "stale" in calls
    assert "claim" not in calls and "next_due" not in calls
