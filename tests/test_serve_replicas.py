"""Two ``tapgate serve`` processes on one PostgreSQL database, as a team deploys them.

An agent long-polls replica A while the approver's signed LINE tap lands on
replica B; 200 asks spread over both replicas are each pushed exactly once.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from tests.fakes import FakeLine
from tests.fakes.taps import free_port, signed_line_tap

TOKEN = "replica-agent-token-0123456789"
SECRET = "replica-channel-secret"
LINE_TOKEN = "replica-line-token"
APPROVER = "U" + "d" * 32


async def start_replica(tmp: Path, name: str, db_url: str, line_url: str) -> tuple[str, object]:
    port = free_port()
    config = tmp / f"{name}.yaml"
    config.write_text(
        f"server: {{host: 127.0.0.1, port: {port}}}\n"
        f"store: {{url: '{db_url}'}}\n"
        f"agents: [{{name: ci, token: '{TOKEN}'}}]\n"
        f"approvers: [{{name: alice, line: '{APPROVER}'}}]\n"
        f"channels: {{line: {{channel_access_token: '{LINE_TOKEN}', "
        f"channel_secret: '{SECRET}', api_base_url: '{line_url}'}}}}\n"
        "policy: {default_timeout: 10m, rules: [{tool: deploy, action: ask}]}\n"
    )
    exe = str(Path(sys.executable).with_name("tapgate"))
    proc = await asyncio.create_subprocess_exec(
        exe,
        "serve",
        "--config",
        str(config),
        env=dict(os.environ),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    async with aiohttp.ClientSession() as session:
        for _ in range(400):
            try:
                async with session.get(url + "/readyz") as response:
                    if response.status == 200:
                        return url, proc
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.05)
    proc.kill()
    raise AssertionError(f"replica {name} never became ready")


@pytest.fixture
async def two_replicas(pg_url: str, tmp_path: Path) -> AsyncIterator[tuple[str, str, FakeLine]]:
    async with FakeLine(access_token=LINE_TOKEN) as line:
        a_url, a = await start_replica(tmp_path, "a", pg_url, line.url)
        b_url, b = await start_replica(tmp_path, "b", pg_url, line.url)
        try:
            yield a_url, b_url, line
        finally:
            for proc in (a, b):
                proc.send_signal(signal.SIGTERM)  # type: ignore[attr-defined]
            for proc in (a, b):
                await asyncio.wait_for(proc.wait(), 30)  # type: ignore[attr-defined]


AUTH = {"Authorization": f"Bearer {TOKEN}"}


async def ask(session: aiohttp.ClientSession, url: str, n: int) -> str:
    async with session.post(
        url + "/v1/tool-calls", headers=AUTH, json={"tool": "deploy", "arguments": {"n": n}}
    ) as response:
        body = await response.json()
    assert body["decision"] == "pending", body
    return str(body["id"])


async def test_a_tap_on_b_wakes_the_agent_waiting_on_a(
    two_replicas: tuple[str, str, FakeLine],
) -> None:
    a_url, b_url, _line = two_replicas
    async with aiohttp.ClientSession() as session:
        took = []
        for n in range(10):
            request_id = await ask(session, a_url, n)
            poll = asyncio.create_task(
                session.get(f"{a_url}/v1/tool-calls/{request_id}?wait=30", headers=AUTH)
            )
            await asyncio.sleep(0.2)  # the long-poll parks on A
            body, headers = signed_line_tap(SECRET, APPROVER, request_id)
            start = time.perf_counter()
            async with session.post(
                b_url + "/webhooks/line", data=body, headers=headers
            ) as response:
                assert response.status == 200
            answered = await asyncio.wait_for(poll, 10)
            took.append(time.perf_counter() - start)
            decided = await answered.json()
            answered.release()
            assert (decided["status"], decided["decided_by"]) == ("approved", "alice")
    # The tap crosses replicas through LISTEN/NOTIFY, not the one-second sweep.
    assert max(took) < 0.1, took


async def test_asks_spread_over_both_replicas_are_pushed_exactly_once(
    two_replicas: tuple[str, str, FakeLine],
) -> None:
    a_url, b_url, line = two_replicas
    connector = aiohttp.TCPConnector(limit=32)
    async with aiohttp.ClientSession(connector=connector) as session:
        ids = await asyncio.gather(
            *(ask(session, (a_url, b_url)[n % 2], 1000 + n) for n in range(200))
        )
    for _ in range(600):
        if len(line.pushes) >= 200:
            break
        await asyncio.sleep(0.05)
    await asyncio.sleep(1.0)  # anything sent twice would arrive by now
    pushed = Counter(rid for p in line.pushes for rid in ids if rid in json.dumps(p.messages))
    assert len(line.pushes) == 200
    assert set(pushed) == set(ids)
    assert set(pushed.values()) == {1}
