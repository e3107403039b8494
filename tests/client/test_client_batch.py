"""The Python client's batches: ``check_many`` on both remote gates, and guarded turns.

Against the real server (``build_app`` on a loopback port), with the policy of
``tests/server/test_api.py``: ``read_file`` is allowed, ``drop_db`` denied,
``deploy`` asks; the human is the test, deciding through the gate.
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any

from tapgate.client import (
    ArgumentsChanged,
    Denied,
    RemoteGate,
    SyncRemoteGate,
    guard,
    run_batch,
    run_batch_sync,
)
from tapgate.gate.models import ToolCall
from tapgate.server.keys import GATE
from tests.client.test_client import Served, served
from tests.server.test_api import CI

__all__ = ["served"]  # the fixture this module shares with test_client

TURN = [
    ToolCall(tool="read_file", arguments={"path": "a"}),
    ToolCall(tool="deploy", arguments={"env": "staging"}),
    ToolCall(tool="deploy", arguments={"env": "prod"}),
    ToolCall(tool="drop_db", arguments={}),
]


async def decide_batch(served: Served, before: Any = None, **verdicts: str) -> None:
    """Once the turn's asks wait, decide each by its ``env`` (after ``before()``): one batch."""
    gate = served.app[GATE]
    for _ in range(5000):
        pending = await gate.list_requests(status="pending")
        if len(pending) == len(verdicts):
            break
        await asyncio.sleep(0.002)
    assert len({r.batch_id for r in pending}) == 1
    if before is not None:
        before()
    for request in pending:
        verdict = verdicts[request.arguments["env"]]
        await gate.resolve(request.id, "approve" if verdict == "approve" else "deny", by="alice")


async def test_the_async_gate_checks_a_turn_as_one_batch(served: Served) -> None:
    async with RemoteGate(served.url, CI, long_poll=0.2) as gate:
        deciding = asyncio.create_task(decide_batch(served, staging="approve", prod="deny"))
        decisions = await asyncio.wait_for(gate.check_many(TURN), 30)
    await deciding
    assert [d.verdict for d in decisions] == ["allow", "allow", "deny", "deny"]
    assert [d.source for d in decisions] == ["policy", "approver", "approver", "policy"]


async def test_the_sync_gate_checks_a_turn_as_one_batch(served: Served) -> None:
    deciding = asyncio.create_task(decide_batch(served, staging="deny", prod="approve"))
    with SyncRemoteGate(served.url, CI, long_poll=0.2) as gate:
        decisions = await asyncio.to_thread(gate.check_many, TURN)
    await deciding
    assert [d.verdict for d in decisions] == ["allow", "deny", "allow", "deny"]


async def test_a_guarded_turn_runs_the_allowed_calls_once(served: Served) -> None:
    ran: list[str] = []

    async with RemoteGate(served.url, CI, long_poll=0.2) as gate:

        @guard(gate)  # decorated tools run undecorated in a batch: one check, the batch's
        async def deploy(env: str) -> str:
            ran.append(env)
            return f"deployed {env}"

        def read_file(path: str) -> str:
            return f"contents of {path}"

        deciding = asyncio.create_task(decide_batch(served, staging="approve", prod="deny"))
        results = await asyncio.wait_for(
            run_batch(
                gate,
                [
                    functools.partial(read_file, "a"),
                    functools.partial(deploy, "staging"),
                    functools.partial(deploy, env="prod"),
                ],
            ),
            30,
        )
    await deciding
    assert results[:2] == ["contents of a", "deployed staging"]
    assert isinstance(results[2], Denied) and results[2].tool == "deploy"
    assert ran == ["staging"]
    assert await served.app[GATE].list_requests(status="pending") == []


async def test_a_sync_guarded_turn_refuses_a_call_changed_while_decided(served: Served) -> None:
    targets: list[str] = ["staging"]

    def deploy(env: str, hosts: list[str]) -> str:
        return f"{env} on {hosts}"

    def decide_and_tamper() -> None:
        # Changed by other code while the call waits for a human: after it was asked, before
        # the decision (changed after the decision, the turn may already have run it).
        tamper = functools.partial(targets.append, "prod-db")
        deciding = decide_batch(served, before=tamper, staging="approve")
        asyncio.run_coroutine_threadsafe(deciding, loop).result(30)

    loop = asyncio.get_running_loop()
    with SyncRemoteGate(served.url, CI, long_poll=0.2) as gate:

        async def turn() -> Any:
            return await asyncio.to_thread(
                run_batch_sync, gate, [functools.partial(deploy, "staging", targets)]
            )

        running = asyncio.create_task(turn())
        await asyncio.to_thread(decide_and_tamper)
        try:
            await asyncio.wait_for(running, 30)
        except ArgumentsChanged:
            pass
        else:
            raise AssertionError("a call changed while it was decided ran anyway")
