"""tapgate's container image, built offline and run under Docker as a site runs it.

The image is built from a local debootstrapped Debian and a wheelhouse with
the build's network off; a container asks and resolves a request, keeps it
and its audit across a restart, and stops cleanly on SIGTERM; compose.yaml's
PostgreSQL setup runs two replicas where a signed LINE tap on one wakes the
agent waiting on the other. Figures (size, start-up) are in
``benchmarks/bench_container.py``, not here.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.container.docker import REPO, docker, docker_async, run_async, wait_ready
from tests.fakes.taps import free_port, signed_line_tap

TOKEN = "container-agent-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
LINE_SECRET = "container-line-channel-secret"
ALICE_LINE = "U" + "a7" * 16
MAX_BYTES = 250_000_000


def published(container: str) -> str:
    """The loopback URL Docker published the container's port 8080 on."""
    address = docker("port", container, "8080/tcp").splitlines()[0]
    return "http://127.0.0.1:" + address.rsplit(":", 1)[1]


async def ask(session: aiohttp.ClientSession, url: str, tool: str) -> str:
    call = {"tool": tool, "arguments": {"env": "prod"}}
    async with session.post(url + "/v1/tool-calls", headers=AUTH, json=call) as response:
        created = await response.json()
    assert created["decision"] == "pending", created
    return str(created["id"])


async def long_poll(session: aiohttp.ClientSession, url: str, request_id: str) -> dict[str, Any]:
    async with session.get(f"{url}/v1/tool-calls/{request_id}?wait=30", headers=AUTH) as r:
        body: dict[str, Any] = await r.json()
        return body


def test_the_image_is_small_runs_as_tapgate_and_ships_no_build_tools(image: str) -> None:
    size = int(docker("image", "inspect", "--format", "{{.Size}}", image))
    assert size < MAX_BYTES, f"{size / 1e6:.0f} MB"
    config = json.loads(docker("image", "inspect", "--format", "{{json .Config}}", image))
    assert config["User"] == "tapgate"
    assert config["Entrypoint"] == ["tapgate"] and config["Cmd"][0] == "serve"
    assert "/var/lib/tapgate" in config["Volumes"]
    assert config["Healthcheck"]["Test"][:2] == ["CMD", "python3"]
    assert "TAPGATE_CONFIG=/etc/tapgate/tapgate.yaml" in config["Env"]
    probe = (
        "id -un; for t in gcc cc make pip pip3 curl; do command -v $t; done; "
        "python3 -c 'import importlib.util as u; "
        'print(*[m for m in ("pytest", "mypy", "hypothesis", "pip", "setuptools") '
        "if u.find_spec(m)])'"
    )
    out = docker("run", "--rm", "--entrypoint", "sh", image, "-c", probe)
    assert out.split() == ["tapgate"], out


async def test_a_request_is_resolved_in_the_container_and_survives_a_restart(
    image: str, volume: str, tmp_path: Path
) -> None:
    """The shipped example config, SQLite in the volume, ``tapgate resolve`` by ``docker exec``."""
    name = f"tapgate-test-{tmp_path.name}".lower()
    docker(
        "run", "--detach", "--name", name, "--env", f"TAPGATE_AGENT_TOKEN={TOKEN}",
        "--volume", f"{REPO / 'examples/docker/tapgate.yaml'}:/etc/tapgate/tapgate.yaml:ro",
        "--volume", f"{volume}:/var/lib/tapgate", "--publish", "127.0.0.1::8080",
        "--health-interval", "1s", image,
    )  # fmt: skip
    try:
        url = published(name)
        await wait_ready(url)
        async with aiohttp.ClientSession() as session:
            request_id = await ask(session, url, "deploy_web")
            poll = asyncio.create_task(long_poll(session, url, request_id))
            await asyncio.sleep(0.2)
            code, out = await docker_async(
                "exec", name, "tapgate", "resolve", request_id, "approve", "--as", "me"
            )
            assert code == 0, out
            decided = await asyncio.wait_for(poll, 20)
        assert (decided["decision"], decided["decided_by"]) == ("allow", "me")
        await until_healthy(name)

        docker("stop", "--time", "20", name, timeout=60)
        assert docker("inspect", "--format", "{{.State.ExitCode}}", name).strip() == "0"
        logs = logs_of(name)
        assert "tapgate stopped" in logs and "Traceback" not in logs

        docker("start", name)
        url = published(name)
        await wait_ready(url)
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"{url}/v1/tool-calls/{request_id}", headers=AUTH) as response,
        ):
            kept = await response.json()
        assert (kept["status"], kept["decided_by"]) == ("approved", "me")
        audit = docker(
            "exec", name, "tapgate", "audit", "--request", request_id, "--format", "jsonl"
        )
        rows = [json.loads(line) for line in audit.splitlines()]
        assert [(r["event"], r["actor"]) for r in rows][-1] == ("approved", "me"), rows
        assert rows[0]["event"] == "requested", rows
        verified = docker("exec", name, "tapgate", "audit", "verify")
        assert verified.startswith("ok:"), verified
    finally:
        docker("rm", "--force", name, check=False)


async def until_healthy(container: str) -> None:
    """Docker runs the image's HEALTHCHECK (python against /readyz) and calls it healthy."""
    status = ""
    for _ in range(100):
        status = docker("inspect", "--format", "{{.State.Health.Status}}", container).strip()
        if status == "healthy":
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"health: {status}")


def logs_of(container: str) -> str:
    done = subprocess.run(
        ["docker", "logs", container], capture_output=True, text=True, check=False
    )
    return done.stdout + done.stderr


REPLICA_CONFIG = f"""\
server: {{host: 0.0.0.0, port: 8080, reconcile_interval: 1h}}
store: {{url: "${{TAPGATE_STORE_URL}}"}}
agents: [{{name: ci, token: "${{TAPGATE_AGENT_TOKEN}}"}}]
approvers: [{{name: alice, line: "{ALICE_LINE}"}}]
channels:
  console: {{enabled: true}}
  line: {{channel_access_token: line-token, channel_secret: {LINE_SECRET},
          api_base_url: "http://127.0.0.1:9"}}
policy: {{rules: [{{tool: deploy, action: ask, approvers: [alice]}}]}}
"""


@pytest.fixture
async def replicas(
    image: str, postgres_image: str, compose: list[str], tmp_path: Path
) -> AsyncIterator[tuple[str, str]]:
    """compose.yaml's ``postgres`` profile with the test's images and a config with LINE."""
    config = tmp_path / "tapgate.yaml"
    config.write_text(REPLICA_CONFIG)
    config.chmod(0o644)
    mount = f"{config}:/etc/tapgate/tapgate.yaml:ro"
    override = tmp_path / "compose.override.yaml"
    override.write_text(
        json.dumps(
            {
                "services": {
                    "postgres": {"image": postgres_image},
                    "replica-a": {"image": image, "volumes": [mount]},
                    "replica-b": {"image": image, "volumes": [mount]},
                }
            }
        )
    )
    a_port, b_port = free_port(), free_port()
    project = "tapgatetest" + "".join(c for c in tmp_path.name.lower() if c.isalnum())
    command = [
        *compose, "--project-name", project, "--profile", "postgres",
        "--file", str(REPO / "compose.yaml"), "--file", str(override),
    ]  # fmt: skip
    env = {
        **os.environ,
        "TAPGATE_AGENT_TOKEN": TOKEN,
        "POSTGRES_PASSWORD": "container-test-password",
        "TAPGATE_A_PORT": str(a_port),
        "TAPGATE_B_PORT": str(b_port),
    }
    code, out = await run_async([*command, "up", "--detach", "--no-build"], env)
    try:
        assert code == 0, out
        a_url, b_url = f"http://127.0.0.1:{a_port}", f"http://127.0.0.1:{b_port}"
        await asyncio.gather(wait_ready(a_url, 120), wait_ready(b_url, 120))
        yield a_url, b_url
    finally:
        await run_async([*command, "down", "--volumes", "--timeout", "20"], env)


async def test_a_tap_on_one_compose_replica_wakes_the_agent_on_the_other(
    replicas: tuple[str, str],
) -> None:
    a_url, b_url = replicas
    async with aiohttp.ClientSession() as session:
        request_id = await ask(session, a_url, "deploy")
        poll = asyncio.create_task(long_poll(session, b_url, request_id))
        await asyncio.sleep(0.3)  # the long-poll parks on B
        body, headers = signed_line_tap(LINE_SECRET, ALICE_LINE, request_id)
        async with session.post(a_url + "/webhooks/line", data=body, headers=headers) as r:
            assert r.status == 200
        decided = await asyncio.wait_for(poll, 15)  # no sweep for an hour: NOTIFY carried it
    assert (decided["status"], decided["decided_by"]) == ("approved", "alice")
