"""The nginx configuration in docs/deploy.md, run by Debian's nginx in front of ``tapgate serve``.

The ``server`` block is read from the document itself, so the sample cannot
drift from what is tested; only what names this machine is replaced (the
listen address and the upstream port; TLS is nginx's own business, so the
test listens in plain HTTP without the certificate lines). Through it: an
agent's long-poll, a signed LINE tap, a Slack button, and a sign-in to the
web inbox with the link the LINE bot sends.

Skipped without nginx; failed instead when ``TAPGATE_REQUIRE_NGINX`` is set
(``.ci/run`` installs it and sets it).
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import pytest

from tests.fakes import FakeLine, FakeSlack
from tests.fakes.served import until
from tests.fakes.slack import dm_channel_for
from tests.fakes.taps import free_port, signed_line_tap, signed_line_text, signed_slack_tap
from tests.replicas import (
    APPROVER,
    AUTH,
    LINE_TOKEN,
    SECRET,
    SLACK_APPROVER,
    SLACK_SECRET,
    Replica,
    ask,
    start_replica,
)

DEPLOY_MD = Path(__file__).resolve().parents[2] / "docs" / "deploy.md"
UPSTREAM = "proxy_pass http://127.0.0.1:8080;"


def documented_server_block() -> str:
    """The one ``nginx`` code block of docs/deploy.md."""
    blocks = re.findall(r"```nginx\n(.*?)```", DEPLOY_MD.read_text(), re.DOTALL)
    assert len(blocks) == 1, "docs/deploy.md should have exactly one nginx sample"
    return str(blocks[0])


def local_config(block: str, *, listen: int, upstream: int, where: Path) -> str:
    """The documented block on this machine's ports, inside a minimal nginx.conf."""
    lines = []
    for line in block.splitlines():
        stripped = line.strip()
        if stripped == "listen 443 ssl;":
            lines.append(f"    listen 127.0.0.1:{listen};")
        elif not stripped.startswith("ssl_certificate"):
            lines.append(line)
    server = "\n".join(lines)
    assert server.count(UPSTREAM) >= 1 and f"127.0.0.1:{listen};" in server, block
    server = server.replace(UPSTREAM, f"proxy_pass http://127.0.0.1:{upstream};")
    temp = " ".join(
        f"{kind}_temp_path {where / kind};"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    return (
        f"daemon off; worker_processes 1; pid {where / 'nginx.pid'};\n"
        f"error_log {where / 'error.log'} warn;\n"
        "events { worker_connections 64; }\n"
        f"http {{ access_log {where / 'access.log'}; {temp}\n{server}\n}}\n"
    )


def nginx_binary() -> str:
    found = shutil.which("nginx") or (
        "/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None
    )
    if found is None:
        if os.environ.get("TAPGATE_REQUIRE_NGINX"):
            pytest.fail("TAPGATE_REQUIRE_NGINX is set but nginx is not installed")
        pytest.skip("nginx is not installed (apt-get install nginx)")
    return found


@pytest.fixture
def nginx_port(tmp_path: Path) -> Iterator[tuple[int, int]]:
    """nginx with the documented block, listening on a free port: (its port, tapgate's)."""
    binary = nginx_binary()
    listen, upstream = free_port(), free_port()
    where = tmp_path / "nginx"
    where.mkdir()
    where.chmod(0o755)  # the workers (nobody, under a root master) read nothing else here
    conf = where / "nginx.conf"
    conf.write_text(
        local_config(documented_server_block(), listen=listen, upstream=upstream, where=where)
    )
    check = subprocess.run(
        [binary, "-t", "-c", str(conf)], capture_output=True, text=True, check=False
    )
    assert check.returncode == 0, check.stderr
    proc = subprocess.Popen([binary, "-c", str(conf)], stderr=subprocess.PIPE)
    try:
        yield listen, upstream
    finally:
        proc.terminate()
        proc.wait(10)
        assert proc.stderr is not None
        proc.stderr.close()


@dataclass
class Proxied:
    url: str  # nginx's
    line: FakeLine
    slack: FakeSlack


@pytest.fixture
async def proxied(nginx_port: tuple[int, int], tmp_path: Path) -> AsyncIterator[Proxied]:
    """``tapgate serve`` (LINE and Slack on the fakes) on the upstream port, nginx before it."""
    listen, upstream = nginx_port
    url = f"http://127.0.0.1:{listen}"
    async with FakeLine(access_token=LINE_TOKEN) as line, FakeSlack() as slack:
        server: Replica = await start_replica(
            tmp_path, "behind-nginx", f"sqlite:///{tmp_path / 'tapgate.db'}", line.url,
            server=f"public_url: '{url}'", slack_url=slack.url, port=upstream,
        )  # fmt: skip
        try:
            yield Proxied(url, line, slack)
        finally:
            assert await server.stop() == 0


async def test_a_long_poll_and_a_line_tap_pass_through_nginx(proxied: Proxied) -> None:
    async with aiohttp.ClientSession() as session:
        request_id = await ask(session, proxied.url, 0)
        poll = asyncio.create_task(
            session.get(f"{proxied.url}/v1/tool-calls/{request_id}?wait=30", headers=AUTH)
        )
        await asyncio.sleep(0.3)  # parked behind the proxy
        body, headers = signed_line_tap(SECRET, APPROVER, request_id)
        async with session.post(proxied.url + "/webhooks/line", data=body, headers=headers) as r:
            assert r.status == 200
        response = await asyncio.wait_for(poll, 15)
        decided = await response.json()
        response.release()
    assert (decided["status"], decided["decided_by"]) == ("approved", "alice")


async def test_a_slack_button_passes_through_nginx(proxied: Proxied) -> None:
    async with aiohttp.ClientSession() as session:
        request_id = await ask(session, proxied.url, 1)
        body, headers = signed_slack_tap(
            SLACK_SECRET, SLACK_APPROVER, request_id, channel=dm_channel_for(SLACK_APPROVER)
        )
        async with session.post(proxied.url + "/webhooks/slack", data=body, headers=headers) as r:
            assert r.status == 200
        # The decision follows Slack's 200 (acknowledged first): a short long-poll reads it.
        async with session.get(
            f"{proxied.url}/v1/tool-calls/{request_id}?wait=10", headers=AUTH
        ) as r:
            decided = await r.json()
    assert (decided["status"], decided["decided_by"]) == ("approved", "alice")


async def test_the_inbox_sign_in_link_from_line_works_through_nginx(proxied: Proxied) -> None:
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:
        body, headers = signed_line_text(SECRET, APPROVER, "inbox")
        async with session.post(proxied.url + "/webhooks/line", data=body, headers=headers) as r:
            assert r.status == 200
        await until(lambda: bool(proxied.line.replies))
        text = proxied.line.replies[0].messages[0]["text"]
        link = re.search(r"(http://\S+/inbox/sign-in\?token=\S+)", text)
        assert link is not None and link.group(1).startswith(proxied.url), text
        async with session.get(link.group(1)) as page:
            assert page.status == 200
            form = dict(re.findall(r'name="(token|pre)" value="([^"]+)"', await page.text()))
        async with session.post(
            proxied.url + "/inbox/sign-in", data=form, allow_redirects=False
        ) as signed_in:
            assert signed_in.status == 303, await signed_in.text()
            assert signed_in.headers["Location"] == "/inbox"
        async with session.get(proxied.url + "/inbox") as inbox:
            assert inbox.status == 200
            assert "alice" in await inbox.text()
        async with session.get(proxied.url + "/metrics") as metrics:
            assert metrics.status == 403  # the sample keeps /metrics off the internet
