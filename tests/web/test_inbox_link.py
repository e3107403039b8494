"""``tapgate inbox-link --as NAME``: a sign-in link from the shell, for a console-only setup.

The command runs as the operator runs it (``main``, with a config that holds
the store, the approvers and the server's address only); the link it prints
is opened against the real app on that address, as a browser would: the GET
shows the "Sign in" page and uses nothing, the POST signs in, once.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from aiohttp.test_utils import TestServer

from tapgate.cli import main
from tapgate.config import parse_config
from tapgate.server.app import build_app
from tapgate.server.keys import GATE

_HIDDEN = re.compile(r'name="(\w+)" value="([^"]*)"')


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[TestServer]:
    """The real app with the console alone (no chat to ask for a link), on a loopback port."""
    config = {
        "store": {"url": f"sqlite:///{tmp_path / 'tapgate.db'}"},
        "approvers": [{"name": "alice"}, {"name": "bob"}],
    }
    server = TestServer(build_app(parse_config(config)), host="127.0.0.1")  # binds port 0 itself
    await server.start_server()
    yield server
    await server.close()


def cli_config(tmp_path: Path, server: dict[str, object]) -> Path:
    """What the operator's file holds; ``${SLACK_TOKEN}`` is unset, and need not be."""
    path = tmp_path / "tapgate.yaml"
    config = {
        "server": server,
        "store": {"url": f"sqlite:///{tmp_path / 'tapgate.db'}"},
        "approvers": [{"name": "alice"}, {"name": "bob"}],
        "channels": {"slack": {"bot_token": "${SLACK_TOKEN}", "signing_secret": "${NOPE}"}},
    }
    path.write_text(json.dumps(config))
    return path


async def inbox_link(
    capsys: pytest.CaptureFixture[str], config: Path, name: str
) -> tuple[int, str, str]:
    code = await asyncio.to_thread(main, ["inbox-link", "--config", str(config), "--as", name])
    out, err = capsys.readouterr()
    return code, out.strip(), err


async def sign_in(http: aiohttp.ClientSession, link: str) -> tuple[int, str]:
    """Open ``link`` and press "Sign in"; the final status and page."""
    async with http.get(link) as page:
        if page.status != 200:
            return page.status, await page.text()
        fields = dict(_HIDDEN.findall(await page.text()))
    base = link.split("/inbox/", maxsplit=1)[0]
    async with http.post(base + "/inbox/sign-in", data=fields) as done:
        return done.status, await done.text()


def browser() -> aiohttp.ClientSession:
    return aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))


async def test_the_link_signs_in_once_through_the_real_app(
    tmp_path: Path, served: TestServer, capsys: pytest.CaptureFixture[str]
) -> None:
    config = cli_config(tmp_path, {"host": "0.0.0.0", "port": served.port})
    code, link, err = await inbox_link(capsys, config, "alice")
    assert code == 0, err
    base = f"http://127.0.0.1:{served.port}"  # a wildcard bind is linked as loopback
    assert re.fullmatch(rf"{re.escape(base)}/inbox/sign-in\?token=[A-Za-z0-9_\-]{{43}}", link)
    assert f"no server.public_url: the link uses the server's own address {base}" in err
    async with browser() as mine, browser() as thief:
        async with mine.get(link) as page:  # showing the page uses nothing
            assert page.status == 200
            assert "Open the inbox as <b>alice</b>" in await page.text()
        async with mine.get(base + "/inbox") as inbox:
            assert inbox.status == 401
            assert "tapgate inbox-link --as NAME" in await inbox.text()
        status, page_text = await sign_in(mine, link)
        assert status == 200 and "alice" in page_text
        status, page_text = await sign_in(thief, link)  # single-use
        assert status == 410
        assert "tapgate inbox-link --as NAME" in page_text
    audit = await served.app[GATE].audit_log()
    assert [(a.event, a.actor) for a in audit[-3:]] == [
        ("inbox_link_issued", "alice"),
        ("inbox_signed_in", "alice"),
        ("inbox_sign_in_refused", "alice"),
    ]
    assert audit[-3].detail["via"] == "cli"  # audited like a chat's link, naming the shell


async def test_a_public_url_is_used_as_it_is(
    tmp_path: Path, served: TestServer, capsys: pytest.CaptureFixture[str]
) -> None:
    public = f"http://127.0.0.1:{served.port}"
    config = cli_config(tmp_path, {"public_url": public, "port": 1})
    code, link, err = await inbox_link(capsys, config, "bob")
    assert code == 0
    assert link.startswith(f"{public}/inbox/sign-in?token=")
    assert "public_url" not in err
    async with browser() as http:
        assert (await sign_in(http, link))[0] == 200


async def test_an_unknown_name_is_one_clear_error(
    tmp_path: Path, served: TestServer, capsys: pytest.CaptureFixture[str]
) -> None:
    before = len(await served.app[GATE].audit_log())
    code, link, err = await inbox_link(capsys, cli_config(tmp_path, {}), "mallory")
    assert (code, link) == (2, "")
    assert err.strip() == (
        "tapgate: error: approvers: no approver named 'mallory' (approvers: alice, bob)"
    )
    assert len(await served.app[GATE].audit_log()) == before
