"""No request waits for nobody: when no approver can be reached, the request ends at once.

The real dispatcher, gate and store (SQLite, and PostgreSQL where configured)
with recording notifiers that fail for good the way LINE's monthly quota does.
"""

from __future__ import annotations

import io
from collections.abc import AsyncIterator

import pytest

from tapgate.channels.console.notifier import ConsoleNotifier
from tapgate.delivery.dispatcher import Dispatcher
from tapgate.delivery.recording import RecordingNotifier
from tapgate.errors import PermanentDeliveryError
from tapgate.gate.clock import ManualClock
from tapgate.gate.directory import Approver, Directory
from tapgate.gate.gate import Gate
from tapgate.gate.models import ToolCall
from tapgate.policy.engine import Policy
from tapgate.policy.rules import PolicySpec, Rule
from tapgate.server.metrics import Metrics
from tapgate.server.unreachable import Unreachable
from tapgate.store import Store

POLICY = Policy(
    PolicySpec(
        rules=(Rule(tool="deploy", action="ask", approvers=("alice",), source="policy.rules[0]"),)
    )
)
QUOTA = "You have reached your monthly limit."


def directory(*addresses: tuple[str, str]) -> Directory:
    return Directory([Approver(name="alice", addresses=addresses)], channels=("line", "slack"))


class Setup:
    def __init__(self, gate: Gate, console: io.StringIO, metrics: Metrics) -> None:
        self.gate, self.console, self.metrics = gate, console, metrics

    def ended(self) -> float:
        value = self.metrics.registry.get_sample_value("tapgate_unreachable_requests_total")
        return value or 0.0


@pytest.fixture
async def only_line(store: Store, clock: ManualClock) -> AsyncIterator[tuple[Setup, Dispatcher]]:
    line = RecordingNotifier("line")
    line.fail_next(PermanentDeliveryError(QUOTA, status=429))
    async with Gate(
        store=store, policy=POLICY, directory=directory(("line", "LA")), clock=clock
    ) as gate:
        stream, metrics = io.StringIO(), Metrics()
        unreachable = Unreachable(gate, metrics, ConsoleNotifier(stream))
        dispatcher = Dispatcher(store, [line], clock=clock, on_unreachable=unreachable)
        yield Setup(gate, stream, metrics), dispatcher
        await dispatcher.close()
        await unreachable.close()


async def test_a_quota_429_on_the_only_channel_ends_the_request_at_once(
    only_line: tuple[Setup, Dispatcher], caplog: pytest.LogCaptureFixture
) -> None:
    setup, dispatcher = only_line
    ticket = await setup.gate.submit(ToolCall(tool="deploy", arguments={"env": "prod"}))
    assert ticket.request is not None
    await dispatcher.run_once()
    decision = await setup.gate.wait(ticket.request.id, timeout=0)
    assert decision is not None, "the request was left to time out"
    assert (decision.verdict, decision.source) == ("deny", "timeout")  # its on_timeout verdict
    assert decision.reason == "no approver could be reached"
    request = await setup.gate.get_request(ticket.request.id)
    assert (request.status, request.resolved_by) == ("expired", "unreachable")
    audit = await setup.gate.audit_log(request_id=request.id)
    assert [(a.event, a.actor) for a in audit][-1] == ("expired", "unreachable")
    assert setup.ended() == 1
    assert "could not reach any approver" in setup.console.getvalue()
    assert sum("no approver could be reached" in r.message for r in caplog.records) == 1


async def test_one_channel_left_keeps_the_request_waiting(store: Store, clock: ManualClock) -> None:
    line, slack = RecordingNotifier("line"), RecordingNotifier("slack")
    line.fail_next(PermanentDeliveryError(QUOTA, status=429))
    both = directory(("line", "LA"), ("slack", "UA"))
    async with Gate(store=store, policy=POLICY, directory=both, clock=clock) as gate:
        metrics = Metrics()
        unreachable = Unreachable(gate, metrics, None)
        dispatcher = Dispatcher(store, [line, slack], clock=clock, on_unreachable=unreachable)
        ticket = await gate.submit(ToolCall(tool="deploy"))
        await dispatcher.run_once()
        assert ticket.request is not None
        assert (await gate.get_request(ticket.request.id)).is_pending  # Slack can still answer
        await dispatcher.close()
        await unreachable.close()


async def test_a_request_with_nothing_to_send_ends_at_once(
    store: Store, clock: ManualClock
) -> None:
    nowhere = directory()  # alice has no address on any enabled channel
    async with Gate(store=store, policy=POLICY, directory=nowhere, clock=clock) as gate:
        metrics = Metrics()
        unreachable = Unreachable(gate, metrics, None)
        ticket = await gate.submit(ToolCall(tool="deploy"))
        assert ticket.request is not None
        decision = await gate.wait(ticket.request.id, timeout=5)
        assert decision is not None and decision.reason == "no approver could be reached"
        await unreachable.close()
