"""The gate: immediate verdicts, durable asks, exactly-once resolution, expiry, grants."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import pytest

from tapgate.errors import AlreadyResolved, NotAnApprover, RequestExpired
from tapgate.gate.clock import ManualClock
from tapgate.gate.directory import Approver, Directory
from tapgate.gate.gate import Gate
from tapgate.gate.models import CONTACT_TOOL, DecidedAtOnce, GateEvent, ToolCall
from tapgate.policy.engine import Policy
from tapgate.policy.rules import PolicySpec, Rule, ToolSpec
from tapgate.store import Store

SPEC = PolicySpec(
    tools=(
        ToolSpec(name="read_file", risk="read_only"),
        ToolSpec(name="drop_db", risk="destructive"),
        ToolSpec(name="Bash", risk="write", shell="command"),
    ),
    rules=(
        Rule(
            tool="deploy", action="ask", approvers=("oncall",), timeout=60, source="policy.rules[0]"
        ),
        Rule(tool="Bash", action="allow", args={"command": "ls*"}, source="policy.rules[1]"),
    ),
    default_timeout=120,
)
DIRECTORY = Directory(
    [
        Approver(name="alice", addresses=(("slack", "UA"),), groups=("oncall",)),
        Approver(name="bob", addresses=(("slack", "UB"),), groups=("oncall",)),
        Approver(name="carol", addresses=(("slack", "UC"),)),
    ],
    channels=("console", "slack"),
)
DEPLOY = ToolCall(tool="deploy", arguments={"env": "prod"}, agent="ci", session="s1")


def make_gate(store: Store, clock: ManualClock, spec: PolicySpec = SPEC) -> Gate:
    return Gate(
        store=store, policy=Policy(spec), directory=DIRECTORY, clock=clock, reconcile_interval=5
    )


@pytest.fixture
async def gate(store: Store, clock: ManualClock) -> AsyncIterator[Gate]:
    async with make_gate(store, clock) as g:
        yield g


async def until(predicate: Callable[[], bool]) -> None:
    """Let other tasks (and the database thread) run until ``predicate`` holds, for up to 5 s.

    Only I/O is waited for here; no outcome depends on how long this takes.
    """
    for _ in range(1000):
        if predicate():
            return
        await asyncio.sleep(0.005)
    raise AssertionError("condition never became true")


async def test_policy_allow_and_deny_return_at_once(gate: Gate, store: Store) -> None:
    allowed = await gate.check(ToolCall(tool="read_file", arguments={"path": "/x"}))
    denied = await gate.check(ToolCall(tool="drop_db"))
    assert allowed.allowed and allowed.source == "policy" and allowed.status == "allowed"
    assert allowed.rule == "policy.risk_defaults.read_only"
    assert not denied.allowed and denied.status == "denied"
    assert "destructive" in denied.reason
    assert await store.list_requests() == []


async def test_ask_waits_for_an_approver(gate: Gate, store: Store) -> None:
    events: list[GateEvent] = []
    gate.bus.subscribe(events.append)
    checking = asyncio.create_task(gate.check(DEPLOY))
    await until(lambda: gate.waiting > 0)
    [pending] = await store.list_requests(status="pending")
    assert pending.approvers == ("alice", "bob")
    assert not checking.done()
    await gate.resolve(pending.id, "approve", by="alice")
    decision = await checking
    assert decision.allowed and decision.status == "approved"
    assert decision.source == "approver" and decision.decided_by == "alice"
    assert decision.request_id == pending.id and decision.rule == "policy.rules[0]"
    assert [e.kind for e in events] == ["requested", "resolved"]


async def test_a_decision_between_the_read_and_the_park_is_not_lost(gate: Gate) -> None:
    """The long-poll reads the request, then parks: a tap landing in between must wake it.

    ``known`` is exactly that stale read. Time never moves here, so only a
    wake-up (not the sweep or a deadline) can end the wait.
    """
    ticket = await gate.submit(DEPLOY)
    stale = ticket.request
    assert stale is not None and stale.is_pending
    await gate.resolve(stale.id, "deny", by="bob", reason="not now")
    decided = await asyncio.wait_for(gate.wait_for(stale.id, timeout=30, known=stale), 2)
    assert (decided.status, decided.resolved_by) == ("denied", "bob")
    assert gate.waiting == 0


async def test_denial_reason_reaches_the_agent(gate: Gate) -> None:
    ticket = await gate.submit(DEPLOY)
    assert ticket.request_id is not None
    await gate.resolve(ticket.request_id, "deny", by="bob", reason="not on a Friday")
    decision = await gate.wait(ticket.request_id)
    assert decision is not None and not decision.allowed
    assert decision.status == "denied" and decision.reason == "not on a Friday"


async def test_hundred_concurrent_resolvers_one_winner(gate: Gate, store: Store) -> None:
    ticket = await gate.submit(DEPLOY)
    rid = ticket.request_id
    assert rid is not None
    results = await asyncio.gather(
        *(
            gate.resolve(rid, "approve" if i % 2 else "deny", by=("alice", "bob")[i % 2])
            for i in range(100)
        ),
        return_exceptions=True,
    )
    winners = [r for r in results if not isinstance(r, BaseException)]
    losers = [r for r in results if isinstance(r, BaseException)]
    assert len(winners) == 1
    assert len(losers) == 99 and all(isinstance(e, AlreadyResolved) for e in losers)
    audit = await store.audit_log(request_id=rid)
    assert sum(e.event in ("approved", "denied") for e in audit) == 1
    assert sum(e.event == "refused" for e in audit) == 99


async def test_expiry_with_injected_clock(gate: Gate, clock: ManualClock) -> None:
    checking = asyncio.create_task(gate.check(DEPLOY))
    await until(lambda: clock.sleepers >= 2)  # the waiter and the sweep are parked
    clock.advance(59)
    await asyncio.sleep(0)
    assert not checking.done()
    clock.advance(1)
    decision = await checking
    assert decision.status == "expired" and not decision.allowed
    assert decision.source == "timeout"


async def test_on_timeout_allow(store: Store, clock: ManualClock) -> None:
    spec = PolicySpec(rules=SPEC.rules, on_timeout="allow")
    async with make_gate(store, clock, spec) as gate:
        checking = asyncio.create_task(gate.check(DEPLOY))
        await until(lambda: gate.waiting > 0)
        clock.advance(60)
        decision = await checking
    assert decision.status == "expired" and decision.allowed


async def test_late_tap_is_refused_before_any_sweep(gate: Gate, clock: ManualClock) -> None:
    ticket = await gate.submit(DEPLOY)
    assert ticket.request_id is not None
    clock.advance(61)
    with pytest.raises(RequestExpired):
        await gate.resolve(ticket.request_id, "approve", by="alice")
    assert (await gate.get_request(ticket.request_id)).status == "expired"


async def test_non_approver_changes_nothing(gate: Gate, store: Store) -> None:
    ticket = await gate.submit(DEPLOY)
    rid = ticket.request_id
    assert rid is not None
    with pytest.raises(NotAnApprover):
        await gate.resolve(rid, "approve", by="carol")  # an approver, but not of this request
    with pytest.raises(NotAnApprover):
        await gate.resolve(rid, "approve", by="ci")  # the agent itself
    assert (await gate.get_request(rid)).status == "pending"
    refused = [e for e in await store.audit_log(request_id=rid) if e.event == "refused"]
    assert [e.actor for e in refused] == ["carol", "ci"]


async def test_break_glass_is_audited(gate: Gate, store: Store) -> None:
    ticket = await gate.submit(DEPLOY)
    assert ticket.request_id is not None
    await gate.resolve(ticket.request_id, "approve", by="ops", authorize=False)
    [entry] = [e for e in await store.audit_log() if e.event == "approved"]
    assert entry.actor == "ops" and entry.detail["break_glass"] is True


async def test_identical_pending_request_is_reused(gate: Gate) -> None:
    first = await gate.submit(DEPLOY)
    second = await gate.submit(DEPLOY)
    other = await gate.submit(ToolCall(tool="deploy", arguments={"env": "staging"}, agent="ci"))
    assert first.request_id == second.request_id and second.reused
    assert other.request_id != first.request_id


async def test_wait_timeout_returns_none_while_pending(gate: Gate, clock: ManualClock) -> None:
    ticket = await gate.submit(DEPLOY)
    assert ticket.request_id is not None
    waiting = asyncio.create_task(gate.wait(ticket.request_id, timeout=5))
    await until(lambda: gate.waiting > 0)
    clock.advance(5)
    assert await waiting is None
    assert (await gate.get_request(ticket.request_id)).status == "pending"


async def test_a_wait_that_ends_undecided_answers_the_store_not_its_copy(
    db_url: str, clock: ManualClock
) -> None:
    """A parked wait keeps the id and deadline only: when it ends it reads the request again."""
    async with (
        await Store.open(db_url) as store_a,
        await Store.open(db_url) as store_b,
        make_gate(store_a, clock) as gate_a,
        make_gate(store_b, clock) as gate_b,
    ):
        ticket = await gate_a.submit(DEPLOY)
        assert ticket.request is not None
        request = ticket.request
        waiting = asyncio.create_task(gate_a.wait_pending(request.id, request.expires_at, 4))
        await until(lambda: gate_a.waiting > 0)
        # Decided elsewhere; this gate's sweep (every 5 s) does not run before the wait ends.
        await gate_b.resolve(request.id, "approve", by="alice")
        clock.advance(4)
        answered = await asyncio.wait_for(waiting, 5)
    assert answered.status == "approved" and answered.resolved_by == "alice"


async def test_restart_finds_pending_request_and_waiter_attaches(
    db_url: str, clock: ManualClock
) -> None:
    async with await Store.open(db_url) as store1, make_gate(store1, clock) as gate1:
        ticket = await gate1.submit(DEPLOY)
    rid = ticket.request_id
    assert rid is not None
    async with await Store.open(db_url) as store2, make_gate(store2, clock) as gate2:
        assert (await gate2.get_request(rid)).status == "pending"
        waiting = asyncio.create_task(gate2.wait(rid))
        await until(lambda: gate2.waiting > 0)
        await gate2.resolve(rid, "approve", by="bob")
        decision = await waiting
    assert decision is not None and decision.status == "approved"


async def test_decision_from_another_process_wakes_the_waiter(
    db_url: str, clock: ManualClock
) -> None:
    async with (
        await Store.open(db_url) as store_a,
        await Store.open(db_url) as store_b,
        make_gate(store_a, clock) as gate_a,
        make_gate(store_b, clock) as gate_b,
    ):
        ticket = await gate_a.submit(DEPLOY)
        assert ticket.request_id is not None
        waiting = asyncio.create_task(gate_a.wait(ticket.request_id))
        await until(lambda: gate_a.waiting > 0)
        await gate_b.resolve(ticket.request_id, "deny", by="alice")
        if store_a.dialect == "sqlite":
            # No NOTIFY on SQLite: only the sweep can tell gate A.
            await asyncio.sleep(0)
            assert not waiting.done()
            assert await gate_a.reconcile() == 1
        # On PostgreSQL, LISTEN/NOTIFY wakes gate A without any sweep.
        decision = await asyncio.wait_for(waiting, 5)
    assert decision is not None and decision.status == "denied"


async def test_cancel(gate: Gate) -> None:
    ticket = await gate.submit(DEPLOY)
    assert ticket.request_id is not None
    await gate.cancel(ticket.request_id, by="ci", reason="no longer needed")
    decision = await gate.wait(ticket.request_id)
    assert decision is not None and decision.status == "cancelled" and not decision.allowed
    with pytest.raises(AlreadyResolved):
        await gate.resolve(ticket.request_id, "approve", by="alice")


async def test_session_grant_stays_in_its_session(gate: Gate) -> None:
    ticket = await gate.submit(DEPLOY)
    assert ticket.request_id is not None
    await gate.resolve(ticket.request_id, "approve", by="alice", scope="session")
    same = await gate.submit(DEPLOY)
    assert same.decision is not None and same.decision.source == "grant"
    assert same.decision.allowed
    other_session = await gate.submit(
        ToolCall(tool="deploy", arguments={"env": "prod"}, agent="ci", session="s2")
    )
    other_agent = await gate.submit(
        ToolCall(tool="deploy", arguments={"env": "prod"}, agent="other", session="s1")
    )
    other_args = await gate.submit(
        ToolCall(tool="deploy", arguments={"env": "dev"}, agent="ci", session="s1")
    )
    assert other_session.decision is None
    assert other_agent.decision is None
    assert other_args.decision is None


async def test_always_grant_is_durable_and_revocable(gate: Gate) -> None:
    ticket = await gate.submit(DEPLOY)
    assert ticket.request_id is not None
    await gate.resolve(ticket.request_id, "approve", by="alice", scope="always")
    later = await gate.submit(
        ToolCall(tool="deploy", arguments={"env": "prod"}, agent="ci", session="another")
    )
    assert later.decision is not None and later.decision.source == "grant"
    [grant] = await gate.grants()
    assert grant.scope == "always" and grant.created_by == "alice"
    assert await gate.revoke_grant(grant.id, by="ops")
    assert (await gate.submit(DEPLOY)).decision is None


async def test_grant_can_expire(gate: Gate, clock: ManualClock) -> None:
    ticket = await gate.submit(DEPLOY)
    assert ticket.request_id is not None
    await gate.resolve(ticket.request_id, "approve", by="alice", scope="session", grant_ttl=30)
    assert (await gate.submit(DEPLOY)).decision is not None
    clock.advance(31)
    assert (await gate.submit(DEPLOY)).decision is None


async def test_shell_hazard_is_never_granted(gate: Gate) -> None:
    call = ToolCall(tool="Bash", arguments={"command": "ls $(cat list)"}, agent="ci", session="s1")
    ticket = await gate.submit(call)
    assert ticket.request is not None and not ticket.request.grantable
    await gate.resolve(ticket.request.id, "approve", by="alice", scope="always")
    assert await gate.grants() == []
    assert (await gate.submit(call)).decision is None


async def test_expire_overdue_wakes_waiters(gate: Gate, clock: ManualClock) -> None:
    ticket = await gate.submit(DEPLOY)
    assert ticket.request_id is not None
    clock.advance(61)
    [expired] = await gate.expire_overdue()
    assert expired.id == ticket.request_id
    decision = await gate.wait(ticket.request_id)
    assert decision is not None and decision.status == "expired"


def test_ids_are_long_url_safe_and_never_look_like_options() -> None:
    from tapgate.gate.records import new_id

    ids = {new_id() for _ in range(5000)}
    assert len(ids) == 5000
    assert all(len(i) == 22 and not i.startswith("-") for i in ids)
    assert all(c.isalnum() or c in "-_" for i in ids for c in i)


async def test_release_waiters_sends_long_polls_home_unchanged(gate: Gate) -> None:
    ticket = await gate.submit(DEPLOY)
    assert ticket.request_id is not None
    waiting = asyncio.create_task(gate.wait_for(ticket.request_id))
    await until(lambda: gate.waiting > 0)
    gate.release_waiters()
    request = await waiting
    assert request.status == "pending"
    assert (await gate.get_request(ticket.request_id)).status == "pending"


async def test_a_parked_waiter_is_a_timer_not_a_task(gate: Gate, clock: ManualClock) -> None:
    ticket = await gate.submit(DEPLOY)
    request = ticket.request
    assert request is not None
    before = len(asyncio.all_tasks())
    waiters = [asyncio.create_task(gate.wait_for(request.id, known=request)) for _ in range(50)]
    await until(lambda: gate.waiting_on(request.id) == 50)
    assert len(asyncio.all_tasks()) == before + 50  # only the callers' own tasks
    clock.advance(60)
    assert {(await w).status for w in waiters} == {"expired"}


async def test_an_answered_question_never_becomes_a_standing_grant(
    store: Store, clock: ManualClock
) -> None:
    """An answer is for one question; 'always' must not answer the next one unasked."""
    spec = PolicySpec(
        rules=(Rule(tool=CONTACT_TOOL, action="ask", approvers=("alice",), source="r"),),
        default_timeout=120,
    )
    question = ToolCall(tool=CONTACT_TOOL, arguments={"message": "EU or US?"}, agent="ci")
    async with make_gate(store, clock, spec) as gate:
        first = await gate.submit(question, question=True)
        assert first.request is not None and not first.request.grantable
        await gate.resolve(first.request.id, "approve", by="alice", scope="always")
        again = await gate.submit(question, question=True)
    assert again.decision is None and again.request is not None and not again.reused
    assert await store.list_grants() == []


async def test_decisions_made_at_once_are_published_once_each(gate: Gate) -> None:
    """Policy and grant decisions have no request: the bus carries them as ``DecidedAtOnce``."""
    at_once: list[DecidedAtOnce] = []
    gate.bus.subscribe_at_once(at_once.append)
    read = ToolCall(tool="read_file", arguments={"path": "a"}, agent="ci")
    assert (await gate.submit(read)).decision is not None
    ticket = await gate.submit(DEPLOY)
    assert ticket.request_id is not None and not at_once[1:]  # an ask is not "at once"
    await gate.resolve(ticket.request_id, "approve", by="alice", scope="session")
    assert (await gate.submit(DEPLOY)).decision is not None
    assert [(e.call.tool, e.decision.source) for e in at_once] == [
        ("read_file", "policy"),
        ("deploy", "grant"),
    ]
