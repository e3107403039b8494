"""Local handlers and modes on the in-process gate: every answer recorded, audited, exactly once."""

from __future__ import annotations

import asyncio

import pytest

from tapgate.gate.clock import ManualClock
from tapgate.gate.gate import Gate
from tapgate.gate.handlers import (
    Handler,
    HandlerAnswer,
    HandlerFunction,
    Mode,
    approve,
    auto_approve,
    auto_deny,
    deny,
)
from tapgate.gate.models import Request, ToolCall
from tapgate.policy.engine import Policy
from tapgate.store import Store
from tests.gate.test_gate import DEPLOY, DIRECTORY, SPEC, until


def local_gate(
    store: Store,
    clock: ManualClock,
    *,
    handler: Handler | HandlerFunction | None = None,
    mode: Mode = "normal",
) -> Gate:
    return Gate(
        store=store,
        policy=Policy(SPEC),
        directory=DIRECTORY,
        clock=clock,
        handler=handler,
        mode=mode,
    )


async def decided_entry(store: Store, request_id: str | None) -> tuple[str, dict[str, object]]:
    """The audit line of the request's decision: who, and the stored detail."""
    assert request_id is not None
    entries = await store.audit_log(request_id=request_id)
    [entry] = [e for e in entries if e.event in ("approved", "denied")]
    return entry.actor, dict(entry.detail)


async def test_auto_approve_decides_through_the_record(store: Store, clock: ManualClock) -> None:
    gate = local_gate(store, clock, handler=auto_approve())
    decision = await gate.check(DEPLOY)
    assert decision.allowed and decision.status == "approved"
    assert decision.decided_by == "handler:auto_approve"
    [request] = await store.list_requests()  # the ask was still created
    assert request.status == "approved" and request.consumed_at is not None
    actor, detail = await decided_entry(store, decision.request_id)
    assert actor == "handler:auto_approve" and detail["handler"] == "auto_approve"


async def test_auto_deny_carries_its_reason(store: Store, clock: ManualClock) -> None:
    gate = local_gate(store, clock, handler=auto_deny("read-only run: no deploys"))
    decision = await gate.check(DEPLOY)
    assert not decision.allowed and decision.status == "denied"
    assert decision.reason == "read-only run: no deploys"
    actor, detail = await decided_entry(store, decision.request_id)
    assert actor == "handler:auto_deny" and detail["reason"] == "read-only run: no deploys"


async def test_a_sync_callable_answers_with_a_bool(store: Store, clock: ManualClock) -> None:
    def only_staging(request: Request) -> bool:
        return request.arguments.get("env") == "staging"

    gate = local_gate(store, clock, handler=only_staging)
    staging = await gate.check(ToolCall(tool="deploy", arguments={"env": "staging"}, agent="ci"))
    prod = await gate.check(DEPLOY)
    assert staging.allowed and staging.decided_by == "handler:only_staging"
    assert not prod.allowed and prod.reason == "denied by the only_staging handler"


async def test_an_async_callable_answers_with_a_record(store: Store, clock: ManualClock) -> None:
    async def reviewer(request: Request) -> HandlerAnswer:
        await asyncio.sleep(0)
        if request.session is not None:
            return approve(scope="session", reason="looked fine")
        return deny("no session, no deploy")

    gate = local_gate(store, clock, handler=reviewer)
    decision = await gate.check(DEPLOY)
    assert decision.allowed and decision.reason == "looked fine"
    # "session" made a grant: the same call in the same session no longer asks
    again = await gate.check(DEPLOY)
    assert again.source == "grant" and len(await store.list_requests()) == 1
    lone = await gate.check(ToolCall(tool="deploy", arguments={"env": "prod"}, agent="ci"))
    assert not lone.allowed and lone.reason == "no session, no deploy"


async def test_a_pass_leaves_the_ask_to_the_chat(store: Store, clock: ManualClock) -> None:
    gate = local_gate(store, clock, handler=lambda request: None)
    check = asyncio.ensure_future(gate.check(DEPLOY))
    await until(lambda: gate.waiting == 1)
    [request] = await store.list_requests(status="pending")
    await gate.resolve(request.id, "approve", by="alice")
    decision = await check
    assert decision.allowed and decision.decided_by == "alice"


async def test_the_chat_can_beat_the_handler(store: Store, clock: ManualClock) -> None:
    """A slow handler loses to a tap: it is cancelled, and its answer never lands."""
    started, cancelled = asyncio.Event(), asyncio.Event()

    async def slow(request: Request) -> HandlerAnswer:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        raise AssertionError("never answered")

    gate = local_gate(store, clock, handler=slow)
    check = asyncio.ensure_future(gate.check(DEPLOY))
    await started.wait()
    [request] = await store.list_requests(status="pending")
    await gate.resolve(request.id, "deny", by="bob", reason="not today")
    decision = await check
    assert not decision.allowed and decision.decided_by == "bob"
    assert cancelled.is_set()


async def test_a_failing_handler_denies(store: Store, clock: ManualClock) -> None:
    def broken(request: Request) -> bool:
        raise RuntimeError("boom")

    decision = await local_gate(store, clock, handler=broken).check(DEPLOY)
    assert not decision.allowed and decision.decided_by == "handler:broken"
    assert decision.reason == "the broken handler failed; denied"


async def test_approve_all_approves_asks_and_is_audited(store: Store, clock: ManualClock) -> None:
    gate = local_gate(store, clock, mode="approve_all")
    decision = await gate.check(DEPLOY)
    assert decision.allowed and decision.decided_by == "mode:approve_all"
    actor, detail = await decided_entry(store, decision.request_id)
    assert actor == "mode:approve_all" and detail["mode"] == "approve_all"
    # policy's own verdicts are not the mode's to change
    denied = await gate.check(ToolCall(tool="drop_db"))
    assert not denied.allowed and denied.source == "policy"


async def test_strict_denies_asks_and_is_audited(store: Store, clock: ManualClock) -> None:
    gate = local_gate(store, clock, mode="strict", handler=auto_approve())  # the mode wins
    decision = await gate.check(DEPLOY)
    assert not decision.allowed and decision.decided_by == "mode:strict"
    assert "strict mode" in decision.reason
    actor, detail = await decided_entry(store, decision.request_id)
    assert actor == "mode:strict" and detail["mode"] == "strict"
    allowed = await gate.check(ToolCall(tool="read_file", arguments={"path": "/x"}))
    assert allowed.allowed and allowed.source == "policy"


@pytest.mark.parametrize("mode", ["approve_all", "strict"])
async def test_a_mode_never_overrides_a_human(store: Store, clock: ManualClock, mode: Mode) -> None:
    """An identical call a human already decided is answered by that decision, not the mode."""
    plain = local_gate(store, clock)
    ticket = await plain.submit(DEPLOY)
    assert ticket.request_id is not None
    await plain.resolve(ticket.request_id, "deny", by="alice", reason="mine")
    decision = await local_gate(store, clock, mode=mode).check(DEPLOY)
    assert decision.decided_by == "alice"  # the identical call's denial answers at once


async def test_a_batch_is_answered_by_the_mode(store: Store, clock: ManualClock) -> None:
    """``check_many`` asks as ``check`` does: the mode decides each asking call, audited."""
    calls = [DEPLOY, ToolCall(tool="deploy", arguments={"env": "qa"}, agent="ci", session="s1")]
    read = ToolCall(tool="read_file", arguments={"path": "a"}, agent="ci")
    approving = local_gate(store, clock, mode="approve_all")
    decisions = await asyncio.wait_for(approving.check_many([*calls, read]), 5)
    assert [d.decided_by for d in decisions[:2]] == ["mode:approve_all"] * 2
    assert all(d.allowed for d in decisions) and decisions[2].request_id is None  # policy's own
    for decision in decisions[:2]:
        actor, detail = await decided_entry(store, decision.request_id)
        assert (actor, detail["mode"]) == ("mode:approve_all", "approve_all")
    strict = local_gate(store, clock, mode="strict")
    denied = await asyncio.wait_for(
        strict.check_many([ToolCall(tool="deploy", arguments={"env": "eu"}, agent="ci")]), 5
    )
    assert [(d.allowed, d.decided_by) for d in denied] == [(False, "mode:strict")]


async def test_a_batch_is_answered_by_the_handler_call_by_call(
    store: Store, clock: ManualClock
) -> None:
    asked: list[str] = []

    def only_qa(request: Request) -> bool:
        asked.append(str(request.arguments["env"]))
        return bool(request.arguments["env"] == "qa")

    gate = local_gate(store, clock, handler=only_qa)
    qa = ToolCall(tool="deploy", arguments={"env": "qa"}, agent="ci")
    decisions = await asyncio.wait_for(gate.check_many([DEPLOY, qa]), 5)
    assert sorted(asked) == ["prod", "qa"]
    assert [d.allowed for d in decisions] == [False, True]
    assert {d.decided_by for d in decisions} == {"handler:only_qa"}
    [approved] = [r for r in await store.list_requests() if r.status == "approved"]
    assert approved.consumed_at is not None  # the batch ran it: the approval is used
