"""Discord's slash commands through the real server: registered at start, answered in time.

``/whoami``, ``/grants`` (with Revoke), ``/inbox`` and ``/help`` arrive as
signed APPLICATION_COMMAND interactions (type 2) at the Interactions
Endpoint and are answered in the HTTP response with a message only the
sender sees (type 4, flags 64). Registration is the bulk overwrite the fake
Discord records; a refused one is logged and shows in the channel's check.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from aiohttp import web
from pydantic import BaseModel

from tapgate.channels import registry
from tapgate.decisions.buttons import INBOX_POSTBACK, postback_data, revoke_postback_data
from tapgate.decisions.texts import NO_GRANTS, NO_INBOX_FOR_STRANGERS, NOT_GRANT_OWNER, NOT_KNOWN
from tapgate.gate.clock import ManualClock
from tapgate.server.keys import CONFIG, INBOX
from tapgate.server.web_inbox.guard import COOKIE
from tests.channels.discord.served import (
    ALICE_D,
    AUTH,
    BOB_D,
    STRANGER_D,
    DiscordServed,
    served_fixture,
    serving,
)
from tests.fakes import Fault
from tests.fakes.served import Client

RULES: list[dict[str, Any]] = [{"tool": "deploy", "action": "ask", "approvers": ["alice", "bob"]}]
PUBLIC = "http://tapgate.test:8080"
_HIDDEN = re.compile(r'name="(\w+)" value="([^"]*)"')


served = served_fixture(RULES, public_url=PUBLIC)


async def command(served: DiscordServed, name: str, user: str) -> dict[str, Any]:
    """Send ``/name`` as ``user``; the ephemeral answer's ``data``."""
    status, answer = await served.interact(served.signer.command(name, user))
    assert status == 200 and answer["type"] == 4, answer
    assert answer["data"]["flags"] & 64  # only the sender sees it
    data: dict[str, Any] = answer["data"]
    return data


def discord_section(served: DiscordServed) -> BaseModel:
    section = served.app[CONFIG].channels.section("discord")
    assert section is not None
    return section


def custom_ids(data: dict[str, Any]) -> list[str]:
    rows = data.get("components") or []
    return [b["custom_id"] for row in rows for b in row["components"] if "custom_id" in b]


async def grant_session(served: DiscordServed, user: str, session: str) -> None:
    """``user`` presses "Allow for session" on a fresh request of ``session``: a grant."""
    body = {"tool": "deploy", "arguments": {"env": "prod"}, "session": session}
    async with served.client.post("/v1/tool-calls", json=body, headers=AUTH) as response:
        request_id = (await response.json())["id"]
    card = await served.card(user, request_id)
    press = served.signer.press(postback_data("approve_session", request_id), user, message=card)
    _, answer = await served.interact(press)
    assert answer["type"] == 7


async def test_the_commands_are_registered_at_start_with_the_bot_token(
    served: DiscordServed,
) -> None:
    put = served.discord.requests_to("commands")
    assert len(put) == 1 and put[0].method == "PUT"
    assert put[0].headers["authorization"].startswith("Bot ")
    assert [c["name"] for c in served.discord.commands] == ["whoami", "grants", "inbox", "help"]
    assert all(c["type"] == 1 and 1 in c["contexts"] for c in served.discord.commands)
    channel = registry.get("discord")
    assert channel is not None
    results = await channel.check(discord_section(served), {})
    assert [(r.what, r.ok) for r in results] == [("bot token", True), ("slash commands", True)]


async def test_a_refused_registration_is_logged_and_a_check_failure_not_a_crash(
    migrated_db_url: str,
    clock: ManualClock,
    aiohttp_client: Callable[[web.Application], Awaitable[Client]],
    caplog: pytest.LogCaptureFixture,
) -> None:
    def refuse(discord: Any) -> None:
        discord.script("commands", Fault.status(401, {"message": "401: Unauthorized", "code": 0}))

    with caplog.at_level(logging.ERROR, logger="tapgate.channels.discord"):
        async with serving(
            migrated_db_url, clock, aiohttp_client, RULES, before_start=refuse
        ) as served:
            assert "Discord slash commands not registered (HTTP 401" in caplog.text
            assert "Reset Token" in caplog.text and "curl -sS -X PUT" in caplog.text
            assert "fake-discord-bot-token" not in caplog.text  # the token stays out of logs
            # The server runs: cards and presses work without the commands.
            request_id = await served.ask("deploy")
            card = await served.card(ALICE_D, request_id)
            press = served.signer.press(postback_data("approve", request_id), ALICE_D, message=card)
            assert (await served.interact(press))[1]["type"] == 7
            channel = registry.get("discord")
            assert channel is not None
            results = await channel.check(discord_section(served), {})
    failed = [r for r in results if not r.ok]
    assert [r.what for r in failed] == ["slash commands"]
    assert "not registered: /whoami, /grants, /inbox, /help" in failed[0].detail


async def test_whoami_tells_anyone_their_id_and_where_it_goes(served: DiscordServed) -> None:
    stranger = await command(served, "whoami", STRANGER_D)
    assert STRANGER_D in stranger["content"] and f'discord: "{STRANGER_D}"' in stranger["content"]
    known = await command(served, "whoami", ALICE_D)
    assert ALICE_D in known["content"] and "knows you as an approver" in known["content"]
    helped = await command(served, "help", STRANGER_D)
    assert all(f"/{name}" in helped["content"] for name in ("whoami", "grants", "inbox", "help"))


async def test_grants_lists_only_the_senders_own_and_revoke_works_for_its_owner_only(
    served: DiscordServed,
) -> None:
    await grant_session(served, ALICE_D, "s-alice")
    mine = await command(served, "grants", ALICE_D)
    assert "s\\-alice" in mine["content"] or "s-alice" in mine["content"]
    [revoke] = custom_ids(mine)
    assert revoke.startswith("v=1&a=revoke&g=")
    # bob has none of his own, and sees nothing of alice's; a stranger is told who can list.
    bobs = await command(served, "grants", BOB_D)
    assert NO_GRANTS.rstrip(".") in bobs["content"] and custom_ids(bobs) == []
    assert "alice" not in bobs["content"]
    strangers = await command(served, "grants", STRANGER_D)
    assert custom_ids(strangers) == [] and NOT_KNOWN[:30] in strangers["content"]
    # A forged press of alice's Revoke by bob: refused, the grant stays.
    _, forged = await served.interact(served.signer.press(revoke, BOB_D))
    assert forged["type"] == 4 and forged["data"]["flags"] == 64
    assert NOT_GRANT_OWNER[:40] in forged["data"]["content"]
    assert len(custom_ids(await command(served, "grants", ALICE_D))) == 1
    # alice's own press revokes it; the listing is redrawn in place.
    _, done = await served.interact(served.signer.press(revoke, ALICE_D))
    assert done["type"] == 7 and custom_ids(done["data"]) == []
    assert "Revoked" in done["data"]["content"]
    assert custom_ids(await command(served, "grants", ALICE_D)) == []
    # The session asks again: the grant is gone.
    body = {"tool": "deploy", "arguments": {"env": "prod"}, "session": "s-alice"}
    async with served.client.post("/v1/tool-calls", json=body, headers=AUTH) as response:
        assert (await response.json())["status"] == "pending"
    assert await served.app[INBOX].pending() == 0


async def test_a_revoke_of_a_grant_that_does_not_exist_changes_nothing(
    served: DiscordServed,
) -> None:
    _, answer = await served.interact(served.signer.press(revoke_postback_data("nope"), ALICE_D))
    assert answer["type"] == 4 and "does not exist" in answer["data"]["content"]


async def test_inbox_sends_a_link_that_signs_in_only_on_the_post(served: DiscordServed) -> None:
    data = await command(served, "inbox", ALICE_D)
    assert data["flags"] == 64 | 4  # ephemeral, and no preview fetched by Discord
    [row] = data["components"]
    [button] = row["components"]
    assert button["style"] == 5 and "custom_id" not in button
    link = button["url"]
    assert link.startswith(f"{PUBLIC}/inbox/sign-in?token=") and link in data["content"]
    path = link.removeprefix(PUBLIC)
    async with served.client.get(path) as page:  # what a preview or a click does
        assert page.status == 200
        fields = dict(_HIDDEN.findall(await page.text()))
    assert not [c for c in served.client.session.cookie_jar if c.key == COOKIE]
    async with served.client.post("/inbox/sign-in", data=fields) as signed:
        assert signed.status == 200 and "alice" in await signed.text()
    assert [c for c in served.client.session.cookie_jar if c.key == COOKIE]
    stranger = await command(served, "inbox", STRANGER_D)
    assert stranger["content"] == NO_INBOX_FOR_STRANGERS.replace(".", "\\.")
    assert "components" not in stranger


async def test_a_cards_open_inbox_button_answers_the_presser_with_their_own_link(
    served: DiscordServed,
) -> None:
    request_id = await served.ask("deploy")
    card = await served.card(BOB_D, request_id)
    assert INBOX_POSTBACK in card.custom_ids
    _, answer = await served.interact(served.signer.press(INBOX_POSTBACK, BOB_D, message=card))
    assert answer["type"] == 4 and answer["data"]["flags"] & 64
    assert f"{PUBLIC}/inbox/sign-in?token=" in answer["data"]["content"]
    assert (await served.status(request_id))["status"] == "pending"
    assert await served.app[INBOX].pending() == 0  # a link decides nothing and stores nothing
