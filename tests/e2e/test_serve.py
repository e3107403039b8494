"""``tapgate serve`` as users run it: a real process on a real port, stopped by SIGTERM."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import aiohttp
import pytest

from tests.fakes.taps import free_port

TOKEN = "serve-test-agent-token-0123456789"


async def wait_ready(session: aiohttp.ClientSession, url: str) -> None:
    for _ in range(300):
        try:
            async with session.get(url + "/readyz") as response:
                if response.status == 200:
                    return
        except aiohttp.ClientError:
            pass
        await asyncio.sleep(0.05)
    raise AssertionError("tapgate serve never became ready")


async def tapgate(*argv: str, env: dict[str, str]) -> tuple[int, str]:
    exe = str(Path(sys.executable).with_name("tapgate"))
    proc = await asyncio.create_subprocess_exec(
        exe, *argv, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    out, _ = await proc.communicate()
    return proc.returncode or 0, out.decode()


async def test_serve_answers_agents_and_an_operator_decision_wakes_them(tmp_path: Path) -> None:
    port = free_port()
    config = tmp_path / "tapgate.yaml"
    config.write_text(
        f"server: {{host: 127.0.0.1, port: {port}, access_log: all}}\n"
        f"store: {{url: 'sqlite:///{tmp_path / 'serve.db'}'}}\n"
        'agents: [{name: ci, token: "${AGENT_TOKEN}"}]\n'
        "approvers: [{name: alice}]\n"
        "channels: {console: {enabled: true}}\n"
        "policy: {rules: [{tool: deploy, action: ask}]}\n"
    )
    env = {**os.environ, "AGENT_TOKEN": TOKEN}
    exe = str(Path(sys.executable).with_name("tapgate"))
    server = await asyncio.create_subprocess_exec(
        exe,
        "serve",
        "--config",
        str(config),
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    auth = {"Authorization": f"Bearer {TOKEN}"}
    try:
        async with aiohttp.ClientSession() as session:
            await wait_ready(session, url)
            async with session.get(url + "/healthz") as response:
                assert response.status == 200
            async with session.post(
                url + "/v1/tool-calls",
                headers=auth,
                json={"tool": "deploy", "arguments": {"env": "prod"}},
            ) as r:
                created = await r.json()
            assert created["decision"] == "pending"
            poll = asyncio.create_task(
                session.get(f"{url}/v1/tool-calls/{created['id']}?wait=30", headers=auth)
            )
            code, out = await tapgate(
                "resolve",
                created["id"],
                "approve",
                "--as",
                "alice",
                "--config",
                str(config),
                env=env,
            )
            assert code == 0, out
            response = await asyncio.wait_for(poll, 10)  # the sweep runs every second
            decided = await response.json()
            response.release()
            assert (decided["decision"], decided["decided_by"]) == ("allow", "alice")
            async with session.get(url + "/metrics") as r:
                assert "tapgate_pending_requests" in await r.text()
            forged = '/x%0D%0A1.2.3.4%20"POST%20/v1/tool-calls"%20201'
            async with session.get(url + forged) as r:
                assert r.status == 404
    finally:
        server.send_signal(signal.SIGTERM)
        output, _ = await asyncio.wait_for(server.communicate(), 30)
    assert server.returncode == 0
    text = output.decode()
    # The console notifier's hint names this server's config, so it works pasted anywhere.
    assert f"tapgate resolve {created['id']} approve --as alice --config {config}" in text
    assert "Traceback" not in text
    # access_log: all: one line per request, the path without its query string.
    assert f'"GET /v1/tool-calls/{created["id"]}" 200' in text
    assert '"POST /v1/tool-calls" 201' in text
    assert "wait=30" not in text and TOKEN not in text
    assert '"GET /x%0D%0A1.2.3.4%20' in text  # as sent: no line can be forged
    assert not any(line.startswith("1.2.3.4") for line in text.splitlines())


@pytest.mark.parametrize("setting", [None, "off"])
async def test_the_access_log_keeps_refusals_by_default_and_nothing_when_off(
    tmp_path: Path, setting: str | None
) -> None:
    """``errors`` (the default): a line per refused request, none for the allowed calls."""
    port = free_port()
    config = tmp_path / "tapgate.yaml"
    chosen = "" if setting is None else f", access_log: {setting}"
    config.write_text(
        f"server: {{host: 127.0.0.1, port: {port}{chosen}}}\n"
        f"store: {{url: 'sqlite:///{tmp_path / 'serve.db'}'}}\n"
        f'agents: [{{name: ci, token: "{TOKEN}"}}]\n'
        "policy: {rules: [{tool: read, action: allow}]}\n"
    )
    exe = str(Path(sys.executable).with_name("tapgate"))
    server = await asyncio.create_subprocess_exec(
        exe,
        "serve",
        "--config",
        str(config),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    call = {"tool": "read", "arguments": {"path": "/etc/hostname"}}
    try:
        async with aiohttp.ClientSession() as session:
            await wait_ready(session, url)
            auth = {"Authorization": f"Bearer {TOKEN}"}
            async with session.post(url + "/v1/tool-calls", headers=auth, json=call) as r:
                assert (await r.json())["decision"] == "allow"
            wrong = {"Authorization": "Bearer not-the-token-0123456789"}
            async with session.post(url + "/v1/tool-calls", headers=wrong, json=call) as r:
                assert r.status == 401
            async with session.get(url + "/nowhere?x=1") as r:
                assert r.status == 404
    finally:
        server.send_signal(signal.SIGTERM)
        output, _ = await asyncio.wait_for(server.communicate(), 30)
    assert server.returncode == 0
    text = output.decode()
    assert '"POST /v1/tool-calls" 200' not in text
    assert '"GET /readyz" 200' not in text
    if setting == "off":
        assert "aiohttp.access" not in text
    else:
        assert '"POST /v1/tool-calls" 401' in text
        assert '"GET /nowhere" 404' in text
