"""Durable delivery end to end: gate -> outbox -> dispatcher -> real SDK notifiers -> fakes.

Every fault script ends with exactly one delivered message per approver and
channel (or a recorded failure for non-retryable errors); a request committed
by a process that is then killed is delivered after restart; a decision
updates every Slack message of the request.
"""

from __future__ import annotations

import asyncio
import signal
import sys
import textwrap
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tapgate.channels.line.notifier import LineNotifier
from tapgate.channels.slack.notifier import SlackNotifier
from tapgate.delivery import Dispatcher
from tapgate.delivery.retry import RetryPolicy
from tapgate.gate.clock import ManualClock
from tapgate.gate.directory import Approver, Directory
from tapgate.gate.gate import Gate
from tapgate.gate.models import ToolCall
from tapgate.policy.engine import Policy
from tapgate.policy.rules import PolicySpec, Rule, ToolSpec
from tapgate.store import Store
from tests.fakes import FakeLine, FakeSlack, Fault
from tests.tables import outbox_rows

LINE_TOKEN = "line-channel-access-token"
SLACK_TOKEN = "xoxb-test-bot-token"
POLICY = PolicySpec(
    tools=(ToolSpec(name="Bash", shell="command"),),
    rules=(Rule(tool="*", action="ask", source="policy.rules[0]"),),
)
DIRECTORY = Directory(
    [
        Approver(name="alice", addresses=(("line", "U" + "a" * 32), ("slack", "U0ALICE"))),
        Approver(name="bob", addresses=(("line", "U" + "b" * 32), ("slack", "U0BOB"))),
    ],
    channels=("line", "slack"),
)


async def no_sleep(_delay: float) -> None:
    """The notifiers' short retries must not make tests wait."""


@pytest.fixture
async def line() -> AsyncIterator[FakeLine]:
    async with FakeLine(access_token=LINE_TOKEN) as fake:
        yield fake


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack(bot_token=SLACK_TOKEN) as fake:
        yield fake


def notifiers(line: FakeLine, slack: FakeSlack) -> list[LineNotifier | SlackNotifier]:
    policy = RetryPolicy(attempts=4)
    return [
        LineNotifier(LINE_TOKEN, api_base_url=line.url, timeout=0.5, retry=policy, sleep=no_sleep),
        SlackNotifier(
            SLACK_TOKEN, api_base_url=slack.url, timeout=0.5, retry=policy, sleep=no_sleep
        ),
    ]


async def deliver_all(dispatcher: Dispatcher, clock: ManualClock, rounds: int = 10) -> None:
    """Run dispatcher passes, moving time past any long-horizon retry."""
    for _ in range(rounds):
        await dispatcher.run_once()
        clock.advance(3600)


LINE_FAULTS = {
    "500": Fault.status(500),
    "503": Fault.status(503),
    "rate limit": Fault.line_rate_limited(),
    "timeout": Fault.timeout(2.0),
    "dropped connection": Fault.drop(),
    "delivered, answer lost": Fault.drop_after_success(),
    "timed out after delivery": Fault.timeout(2.0, deliver=True),
}
SLACK_FAULTS = {
    "500": Fault.status(500),
    "429 with Retry-After": Fault.slack_ratelimited(retry_after=3),
    "429 without Retry-After": Fault.status(429),
    "timeout": Fault.timeout(2.0),
    "dropped connection": Fault.drop(),
    "delivered, answer lost": Fault.drop_after_success(),
    "timed out after delivery": Fault.timeout(2.0, deliver=True),
}


@pytest.mark.parametrize("fault", list(LINE_FAULTS), ids=list(LINE_FAULTS))
async def test_line_fault_ends_with_one_push_per_approver(
    fault: str, store: Store, clock: ManualClock, line: FakeLine, slack: FakeSlack
) -> None:
    line.script("push", LINE_FAULTS[fault])
    gate = Gate(store=store, policy=Policy(POLICY), directory=DIRECTORY, clock=clock)
    await gate.submit(ToolCall(tool="deploy", arguments={"env": "prod"}, agent="ci"))
    dispatcher = Dispatcher(store, notifiers(line, slack), clock=clock)
    await deliver_all(dispatcher, clock)
    await dispatcher.close()
    assert Counter(p.to for p in line.pushes) == {"U" + "a" * 32: 1, "U" + "b" * 32: 1}
    # Every attempt of one message carried that message's retry key.
    keys: dict[str, set[str | None]] = {}
    for req in line.requests_to("push"):
        keys.setdefault(req.body["to"], set()).add(req.headers.get("x-line-retry-key"))
    assert all(len(k) == 1 for k in keys.values())


@pytest.mark.parametrize("fault", list(SLACK_FAULTS), ids=list(SLACK_FAULTS))
async def test_slack_fault_ends_with_one_message_per_approver(
    fault: str, store: Store, clock: ManualClock, line: FakeLine, slack: FakeSlack
) -> None:
    slack.script("chat.postMessage", SLACK_FAULTS[fault])
    gate = Gate(store=store, policy=Policy(POLICY), directory=DIRECTORY, clock=clock)
    await gate.submit(ToolCall(tool="deploy", arguments={"env": "prod"}, agent="ci"))
    dispatcher = Dispatcher(store, notifiers(line, slack), clock=clock)
    await deliver_all(dispatcher, clock)
    await dispatcher.close()
    channels = Counter(channel for channel, _ts in slack.messages)
    assert channels == {slack.dm_channel("U0ALICE"): 1, slack.dm_channel("U0BOB"): 1}


async def test_line_monthly_quota_is_not_retried_and_slack_still_delivers(
    store: Store,
    clock: ManualClock,
    line: FakeLine,
    slack: FakeSlack,
    caplog: pytest.LogCaptureFixture,
) -> None:
    line.script("push", Fault.line_monthly_limit(), Fault.line_monthly_limit())
    gate = Gate(store=store, policy=Policy(POLICY), directory=DIRECTORY, clock=clock)
    ticket = await gate.submit(ToolCall(tool="deploy", arguments={}, agent="ci"))
    dispatcher = Dispatcher(store, notifiers(line, slack), clock=clock)
    await deliver_all(dispatcher, clock)
    await dispatcher.close()
    assert len(line.requests_to("push")) == 2  # one per approver, never again
    assert line.pushes == []
    assert len(slack.messages) == 2  # the approvers' other channel still got it
    rows = await outbox_rows(store, ticket.request_id or "")
    failed = [r for r in rows if r.channel == "line"]
    assert {r.status for r in failed} == {"failed"}
    assert all("monthly limit" in (r.last_error or "") for r in failed)


async def test_decision_updates_every_slack_message(
    store: Store, clock: ManualClock, line: FakeLine, slack: FakeSlack
) -> None:
    gate = Gate(store=store, policy=Policy(POLICY), directory=DIRECTORY, clock=clock)
    ticket = await gate.submit(
        ToolCall(tool="Bash", arguments={"command": "make deploy"}, agent="ci")
    )
    dispatcher = Dispatcher(store, notifiers(line, slack), clock=clock)
    await dispatcher.run_once()
    assert len(slack.messages) == 2
    await gate.resolve(ticket.request_id or "", "approve", by="alice")
    await dispatcher.run_once()
    await dispatcher.close()
    for message in slack.messages.values():
        assert "Approved by alice" in str(message.blocks)
        assert "tapgate_approve" not in str(message.blocks)  # the buttons are gone
    assert line.replies == []  # LINE cannot edit; no push quota is spent on it


KILLED = textwrap.dedent(
    """
    import asyncio, sys
    from tapgate.gate import Approver, Directory, Gate, ToolCall
    from tapgate.policy import Policy, PolicySpec, Rule
    from tapgate.store import Store

    async def main():
        store = await Store.open(sys.argv[1])
        alice = Approver(name="alice", addresses=(("line", sys.argv[2]),))
        gate = Gate(store=store, policy=Policy(PolicySpec(rules=(Rule(tool="*", action="ask"),))),
                    directory=Directory([alice], channels=("line",)))
        ticket = await gate.submit(ToolCall(tool="deploy", agent="ci"))
        print(ticket.request_id, flush=True)
        await asyncio.sleep(3600)  # killed here, before any dispatcher could push

    asyncio.run(main())
    """
)


async def test_request_committed_by_a_killed_process_is_pushed_after_restart(
    db_url: str, tmp_path: Path, line: FakeLine, slack: FakeSlack
) -> None:
    user = "U" + "c" * 32
    script = tmp_path / "killed.py"
    script.write_text(KILLED)
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(script),
        db_url,
        user,
        stdout=asyncio.subprocess.PIPE,
    )
    assert proc.stdout is not None
    request_id = (await proc.stdout.readline()).decode().strip()
    proc.send_signal(signal.SIGKILL)
    await proc.wait()
    assert request_id and line.pushes == []
    async with await Store.open(db_url) as store:
        dispatcher = Dispatcher(store, notifiers(line, slack))
        await dispatcher.run_once()
        await dispatcher.close()
    assert [p.to for p in line.pushes] == [user]
    assert request_id in str(line.pushes[0].messages)
