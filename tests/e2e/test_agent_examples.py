"""The agent examples of docs/integrations.md run as written, against the real server.

``examples/agents/nonblocking_loop.py`` and ``examples/agents/parallel_batch.py``
are loaded from their files and driven with a real ``httpx.Client`` against
``build_app`` on a loopback port, with ``examples/local.yaml``'s policy; the
human is the test, deciding through the gate between turns.
"""

from __future__ import annotations

import asyncio
import importlib.util
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest
import yaml
from aiohttp.test_utils import TestServer

from tapgate.config import parse_config
from tapgate.delivery.recording import RecordingNotifier
from tapgate.gate.clock import ManualClock
from tapgate.gate.gate import Gate
from tapgate.server.app import build_app
from tapgate.server.keys import GATE

REPO = Path(__file__).parents[2]
TOKEN = "local-agent-token-0123456789"


def example(name: str) -> ModuleType:
    path = REPO / "examples" / "agents" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"example_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
async def server(tmp_path: Path, clock: ManualClock) -> AsyncIterator[tuple[str, Gate]]:
    raw: dict[str, Any] = yaml.safe_load((REPO / "examples" / "local.yaml").read_text())
    raw["store"]["url"] = f"sqlite:///{tmp_path / 'examples.db'}"
    raw["agents"][0]["token"] = TOKEN
    raw["server"]["heartbeat_interval"] = 3600
    app = build_app(parse_config(raw), clock=clock, notifiers=[RecordingNotifier("console")])
    async with TestServer(app, host="127.0.0.1") as test_server:
        yield str(test_server.make_url("/")).rstrip("/"), app[GATE]


def client(url: str) -> httpx.Client:
    return httpx.Client(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)


async def test_the_non_blocking_loop_runs_an_approved_call_exactly_once(
    server: tuple[str, Gate],
) -> None:
    url, gate = server
    loop_example = example("nonblocking_loop")
    deploy = {"tool": "deploy_web", "arguments": {"env": "prod"}}
    ran: list[dict[str, Any]] = []
    turn_done, may_go_on = threading.Event(), threading.Event()

    def pause() -> None:  # the human acts between the agent's turns
        turn_done.set()
        assert may_go_on.wait(30)
        may_go_on.clear()

    turns = [deploy, None, None, None]
    with client(url) as http:
        running = asyncio.create_task(
            asyncio.to_thread(loop_example.run_loop, http, turns, ran.append, pause=pause)
        )
        for turn in range(len(turns)):
            await asyncio.to_thread(turn_done.wait, 30)
            turn_done.clear()
            if turn == 0:  # the call was parked, nothing ran; a human approves it now
                assert ran == []
                [pending] = await gate.list_requests(status="pending")
                await gate.resolve(pending.id, "approve", by="me")
            may_go_on.set()
        parked = await asyncio.wait_for(running, 30)
    assert ran == [deploy] and parked == {}


async def test_the_parallel_agent_gates_a_turn_as_one_batch(server: tuple[str, Gate]) -> None:
    url, gate = server
    batch_example = example("parallel_batch")
    calls = [
        {"tool": "Read", "arguments": {"file_path": "README.md"}},
        {"tool": "deploy_web", "arguments": {"env": "staging"}},
        {"tool": "deploy_web", "arguments": {"env": "prod"}},
    ]
    ran: list[dict[str, Any]] = []

    async def decide() -> None:
        for _ in range(3000):
            pending = await gate.list_requests(status="pending")
            if len(pending) == 2:
                break
            await asyncio.sleep(0.01)
        assert len({r.batch_id for r in pending}) == 1  # one batch, one card
        by_env = {r.arguments["env"]: r.id for r in pending}
        await gate.resolve(by_env["staging"], "approve", by="me")
        await gate.resolve(by_env["prod"], "deny", by="me", reason="not on a Friday")

    deciding = asyncio.create_task(decide())
    with client(url) as http:
        states = await asyncio.to_thread(batch_example.run_turn, http, calls, ran.append, wait=5)
    await deciding
    assert ran == calls[:2]
    assert [s["decision"] for s in states] == ["allow", "allow", "deny"]
    assert states[2]["reason"] == "not on a Friday"
