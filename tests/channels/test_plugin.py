"""A channel from outside the tree: docs/channels.md's example package, installed and used.

The package's files are read from the code blocks of docs/channels.md
("Writing a channel"), written to a temporary directory and installed with pip
into a fresh virtualenv that sees this tapgate (through a ``.pth`` file: no
copy, no network). A real ``tapgate serve`` in that virtualenv is configured
with ``channels.memo``, delivers a card through the plugin's notifier and
decides a request from the plugin's signed webhook: the contract works for a
package tapgate has never heard of, with no change to tapgate.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import os
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import aiohttp
import pytest

from tests.e2e.test_serve import wait_ready
from tests.fakes.taps import free_port

ROOT = Path(__file__).parents[2]
DOC = ROOT / "docs" / "channels.md"
TOKEN = "plugin-test-agent-token-0123456789"
SECRET = "memo-secret"
_BLOCK = re.compile(r"```(?:python|toml)\n# file: (?P<name>\S+)\n(?P<body>.*?)```", re.S)


def _package_files() -> dict[str, str]:
    files = {m["name"]: m["body"] for m in _BLOCK.finditer(DOC.read_text(encoding="utf-8"))}
    assert {"pyproject.toml", "tapgate_memo/__init__.py"} <= set(files), files.keys()
    return files


@pytest.fixture(scope="module")
def plugin_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtualenv that sees this tapgate and has the memo channel installed."""
    base = tmp_path_factory.mktemp("plugin")
    package = base / "tapgate-memo"
    for name, body in _package_files().items():
        target = package / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(body, encoding="utf-8")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    # This interpreter's site-packages (tapgate, its dependencies) behind the new venv's own,
    # added as a site directory so that its own .pth files (an editable tapgate) apply too.
    parent = sysconfig.get_paths()["purelib"]
    Path(site, "tapgate-under-test.pth").write_text(f"import site; site.addsitedir({parent!r})\n")
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet",
         "--no-deps", "--no-build-isolation", "--no-index", str(package)],
        check=True,
    )  # fmt: skip
    return venv


def _config(tmp_path: Path, port: int) -> Path:
    config = tmp_path / "tapgate.yaml"
    config.write_text(
        f"server: {{host: 127.0.0.1, port: {port}}}\n"
        f"store: {{url: 'sqlite:///{tmp_path / 'plugin.db'}'}}\n"
        f'agents: [{{name: ci, token: "{TOKEN}"}}]\n'
        "approvers: [{name: alice, memo: alice}, {name: bob, memo: bob}]\n"
        f"channels: {{memo: {{outbox: '{tmp_path / 'cards.jsonl'}', secret: {SECRET}}}}}\n"
        "policy: {rules: [{tool: deploy, action: ask, approvers: [alice]}]}\n"
    )
    return config


def _signed(event: dict[str, str]) -> tuple[bytes, dict[str, str]]:
    body = json.dumps(event).encode()
    signature = hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    return body, {"X-Memo-Signature": signature, "Content-Type": "application/json"}


def _cards(outbox: Path) -> list[dict[str, str]]:
    return [json.loads(line) for line in outbox.read_text().splitlines()] if outbox.exists() else []


async def _card(outbox: Path, request_id: str) -> dict[str, str]:
    for _ in range(200):
        for card in await asyncio.to_thread(_cards, outbox):
            if card["request_id"] == request_id:
                return card
        await asyncio.sleep(0.05)
    raise AssertionError("the plugin's notifier never delivered the card")


async def test_an_installed_channel_package_approves_a_request_end_to_end(
    plugin_venv: Path, tmp_path: Path
) -> None:
    port = free_port()
    config = _config(tmp_path, port)
    env = {**os.environ, "PYTHONPATH": ""}
    server = await asyncio.create_subprocess_exec(
        str(plugin_venv / "bin" / "python"), "-m", "tapgate", "serve", "--config", str(config),
        env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    auth = {"Authorization": f"Bearer {TOKEN}"}
    try:
        async with aiohttp.ClientSession() as session:
            await wait_ready(session, url)
            async with session.post(
                url + "/v1/tool-calls",
                headers=auth,
                json={"tool": "deploy", "arguments": {"env": "prod", "token": "sk-live-abc"}},
            ) as r:
                created = await r.json()
            assert created["decision"] == "pending"
            poll = asyncio.create_task(
                session.get(f"{url}/v1/tool-calls/{created['id']}?wait=30", headers=auth)
            )
            card = await _card(tmp_path / "cards.jsonl", created["id"])
            assert card["to"] == "alice"
            assert card["tool"] == "deploy"

            # A forged signature changes nothing; bob is not this request's approver.
            body, headers = _signed({"event_id": "e0", "user": "alice", "action": "approve",
                                     "request_id": created["id"]})  # fmt: skip
            headers["X-Memo-Signature"] = "0" * 64
            async with session.post(url + "/webhooks/memo", data=body, headers=headers) as r:
                assert r.status == 401
            body, headers = _signed({"event_id": "e1", "user": "bob", "action": "approve",
                                     "request_id": created["id"]})  # fmt: skip
            async with session.post(url + "/webhooks/memo", data=body, headers=headers) as r:
                assert (await r.json())["outcome"] == "not_approver"
            assert not poll.done()

            body, headers = _signed({"event_id": "e2", "user": "alice", "action": "approve",
                                     "request_id": created["id"]})  # fmt: skip
            async with session.post(url + "/webhooks/memo", data=body, headers=headers) as r:
                assert (await r.json())["outcome"] == "applied"
            async with await poll as r:
                answer = await r.json()
            assert answer["decision"] == "allow"
            assert answer["decided_by"] == "alice"

            # The same event again is a redelivery: nothing more happens.
            async with session.post(url + "/webhooks/memo", data=body, headers=headers) as r:
                assert (await r.json())["outcome"] == "duplicate"
    finally:
        if server.returncode is None:
            server.terminate()
        output, _ = await server.communicate()
    assert "memo" in output.decode(), output.decode()


def test_the_plugin_is_listed_among_the_installed_channels(plugin_venv: Path) -> None:
    """An unknown channel's error names the installed ones, the plugin's among them."""
    result = subprocess.run(
        [str(plugin_venv / "bin" / "python"), "-c",
         "from tapgate.config import parse_config\n"
         "try:\n    parse_config({'channels': {'mem': {}}}, env={})\n"
         "except Exception as e:\n    print(e)"],
        check=True, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ""},
    )  # fmt: skip
    assert "did you mean 'memo'" in result.stdout, result.stdout
    installed = result.stdout.split("installed channels: ")[1].split(", ")
    assert {"console", "line", "memo", "slack"} <= {name.strip() for name in installed}
