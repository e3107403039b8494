"""Listing and revoking grants from the chat, end to end: ``/tapgate grants``, LINE ``grants``.

The real app with the real Slack and LINE notifiers pushing to the fake
platforms; every slash command, click, postback and typed text is signed for
real. A grant is made the way approvers make one (an "Always allow" tap), then
listed, revoked and asked about again; refusals change nothing and are
audited; the clock ends grants; a Revoke is stored before its 200.
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import timedelta
from typing import Any
from urllib.parse import urlencode

import pytest
from aiohttp import web

from tapgate.channels.slack import inbox as _slack_inbox
from tapgate.channels.slack.payloads import parse_revoke
from tapgate.config import Config, parse_config
from tapgate.decisions.buttons import revoke_postback_data
from tapgate.decisions.texts import GRANT_GONE, NO_GRANTS, NOT_GRANT_OWNER, NOT_KNOWN
from tapgate.gate.clock import ManualClock
from tapgate.gate.models import Grant, Request, ToolCall
from tapgate.server.app import build_app
from tapgate.server.keys import INBOX
from tests.decisions import test_batch_cards as both
from tests.decisions.test_batch_cards import Served
from tests.fakes import FakeLine, FakeSlack, dm_channel_for, taps
from tests.fakes.receivers import line_webhook
from tests.fakes.served import (
    AGENT_TOKEN,
    ALICE,
    BOB,
    LINE_SECRET,
    LINE_TOKEN,
    SLACK_SECRET,
    TEAM,
    click,
    until,
)
from tests.fakes.slack import DEFAULT_BOT_TOKEN
from tests.fakes.taps import line_body, line_event, line_headers

STRANGER = ("U0STRANGER", "U" + "e5" * 16)
DAY = 86400.0

POLICY: dict[str, Any] = {
    "always_ttl": "2d",
    "tools": {
        "deploy_web": {"fingerprint": ["env"]},
        "restart": {"fingerprint": ["service"], "always_uses": 1},  # single-use Always
    },
    "rules": [
        {"tool": "deploy_web", "action": "ask", "approvers": ["oncall"]},
        {"tool": "restart", "action": "ask", "approvers": ["oncall"]},
    ],
}


def make_config(slack_url: str, line_url: str, db_url: str) -> Config:
    raw = both.make_config(slack_url, line_url, db_url).model_dump(mode="json", exclude_none=True)
    raw["policy"] = POLICY
    raw["store"] = {"url": db_url}
    raw["agents"] = [{"name": "ci", "token": AGENT_TOKEN}]
    raw["channels"]["slack"]["bot_token"] = DEFAULT_BOT_TOKEN
    raw["channels"]["slack"]["signing_secret"] = SLACK_SECRET
    raw["channels"]["line"]["channel_access_token"] = LINE_TOKEN
    raw["channels"]["line"]["channel_secret"] = LINE_SECRET
    return parse_config(raw, env={})


@pytest.fixture
async def served(
    db_url: str,  # first: the database must outlive the app's shutdown
    clock: ManualClock,
    aiohttp_client: Callable[[web.Application], Awaitable[both.Client]],
) -> AsyncIterator[Served]:
    async with FakeSlack() as slack, FakeLine(access_token=LINE_TOKEN) as line:
        app = build_app(make_config(slack.url, line.url, db_url), clock=clock)
        client = await aiohttp_client(app)
        yield Served(app=app, client=client, slack=slack, line=line, clock=clock)
        await client.close()  # the app stops (its dispatcher too) before the fakes do


@pytest.fixture
def db_url(migrated_sqlite_url: str) -> str:
    return migrated_sqlite_url


# -- helpers: what the platforms send -----------------------------------------------


def slack_headers(served: Served, body: bytes, secret: str = SLACK_SECRET) -> dict[str, str]:
    return taps.slack_headers(secret, body, int(served.clock.now().timestamp()))


def command_body(
    served: Served, text: str, user: tuple[str, str], channel_name: str = "general"
) -> bytes:
    """A slash command as Slack posts it: form fields, not ``payload=``."""
    fields = {
        "token": "legacy-verification-token",
        "team_id": TEAM,
        "team_domain": "tapgate",
        "channel_id": "C0GENERAL",
        "channel_name": channel_name,
        "user_id": user[0],
        "user_name": "someone",
        "command": "/tapgate",
        "text": text,
        "api_app_id": "A0TAPGATE",
        "is_enterprise_install": "false",
        "response_url": served.slack.response_url(f"cmd-{uuid.uuid4().hex[:8]}"),
        "trigger_id": f"{uuid.uuid4().int % 10**12}.{uuid.uuid4().hex}",
    }
    return urlencode(fields).encode()


async def slash(
    served: Served,
    text: str,
    user: tuple[str, str] = ALICE,
    *,
    secret: str = SLACK_SECRET,
    channel_name: str = "general",
) -> tuple[int, dict[str, Any]]:
    """``/tapgate <text>``: the status and the JSON answer (ephemeral) in the 200."""
    body = command_body(served, text, user, channel_name)
    headers = slack_headers(served, body, secret)
    async with served.client.post("/webhooks/slack", data=body, headers=headers) as response:
        answer = await response.json(content_type=None)
        return response.status, answer


def revoke_click(served: Served, grant_id: str, user: tuple[str, str]) -> dict[str, Any]:
    """A Revoke click on an ephemeral listing: its ``response_url`` replaces the listing."""
    payload = click("revoke_grant", grant_id, user, "C0GENERAL")
    payload["container"]["is_ephemeral"] = True
    payload["response_url"] = served.slack.response_url(f"list-{uuid.uuid4().hex[:8]}")
    return payload


async def line_post(served: Served, *events: dict[str, Any]) -> list[dict[str, Any]]:
    """Post signed events; the message objects LINE was asked to reply with, in order."""
    body = line_body(*events, destination=both.BOT)
    headers = line_headers(LINE_SECRET, body)
    async with served.client.post("/webhooks/line", data=body, headers=headers) as response:
        assert response.status == 200, await response.text()
    await line_webhook(served.app).settled()
    tokens = {e["replyToken"] for e in events}
    return [m for r in served.line.replies if r.reply_token in tokens for m in r.messages]


async def line_text(
    served: Served, words: str, user: tuple[str, str] = ALICE
) -> list[dict[str, Any]]:
    message = {"id": "468789577898262530", "type": "text", "quoteToken": "q1", "text": words}
    return await line_post(served, line_event("message", user[1], message=message))


async def line_postback(
    served: Served, data: str, user: tuple[str, str] = ALICE
) -> list[dict[str, Any]]:
    return await line_post(served, line_event("postback", user[1], postback={"data": data}))


async def ask(served: Served, env: str = "staging", ref: str = "a1") -> Request:
    call = ToolCall(tool="deploy_web", arguments={"env": env, "ref": ref}, agent="ci")
    ticket = await served.gate.submit(call)
    assert ticket.request is not None, ticket.decision
    return ticket.request


async def allowed_by_grant(served: Served, env: str = "staging") -> bool:
    """Whether the next such call is let through by a grant (else it asks)."""
    call = ToolCall(tool="deploy_web", arguments={"env": env, "ref": uuid.uuid4().hex}, agent="ci")
    ticket = await served.gate.submit(call)
    return ticket.decision is not None and ticket.decision.source == "grant"


async def always_from_slack(
    served: Served, env: str = "staging", who: tuple[str, str] = ALICE
) -> Grant:
    request = await ask(served, env)
    await served.slack_tap(click("approve_always", request.id, who, dm_channel_for(who[0])))
    [grant] = [g for g in await served.gate.grants() if g.request_id == request.id]
    return grant


async def always_from_line(
    served: Served, env: str = "staging", who: tuple[str, str] = ALICE
) -> Grant:
    request = await ask(served, env)
    await line_postback(served, f"v=1&a=approve_always&r={request.id}", who)
    [grant] = [g for g in await served.gate.grants() if g.request_id == request.id]
    return grant


def buttons(blocks: list[dict[str, Any]]) -> list[str]:
    """The grant ids of the Revoke buttons in a Slack listing."""
    return [b["accessory"]["value"] for b in blocks if "accessory" in b]


def flex_revokes(message: dict[str, Any]) -> list[str]:
    """The postback ``data`` of every Revoke button in a LINE Flex listing."""
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            action = node.get("action")
            if isinstance(action, dict) and action.get("label") == "Revoke":
                found.append(action["data"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(message)
    return found


async def audit_events(served: Served, event: str) -> list[tuple[str, dict[str, Any]]]:
    return [(e.actor, dict(e.detail)) for e in await served.gate.audit_log() if e.event == event]


# -- Slack ----------------------------------------------------------------------------


async def test_slack_lists_an_approvers_grants_and_revokes_one_once(served: Served) -> None:
    grant = await always_from_slack(served)
    assert await allowed_by_grant(served)

    status, answer = await slash(served, "grants")
    assert status == 200 and answer["response_type"] == "ephemeral"
    until = (served.clock.now() + timedelta(days=2)).strftime("%Y-%m-%d %H:%M")
    line = f"deploy_web with env=staging for ci, until {until} UTC"
    assert answer["blocks"][0]["text"]["text"] == "Your active grants (1):"
    assert answer["blocks"][1]["text"] == {"type": "plain_text", "text": line}
    assert buttons(answer["blocks"]) == [grant.id]
    assert answer["blocks"][1]["accessory"]["action_id"] == "tapgate_revoke_grant"

    click = revoke_click(served, grant.id, ALICE)
    await served.slack_tap(click)
    [replaced] = served.slack.responses
    assert replaced.body["replace_original"] is True
    assert replaced.body["blocks"][0]["text"]["text"] == (
        "Revoked: deploy_web with env=staging; it will ask again.\n" + NO_GRANTS
    )
    assert buttons(replaced.body["blocks"]) == []
    [revoked] = [g for g in await served.gate.grants(active_only=False) if g.id == grant.id]
    assert (revoked.revoked_by, revoked.revoked_at) == ("alice", served.clock.now())

    await served.slack_tap(click)  # the same act again (a re-sent envelope): nothing twice
    assert len(served.slack.responses) == 1
    assert [actor for actor, _ in await audit_events(served, "grant_revoked")] == ["alice"]
    assert not await allowed_by_grant(served)  # asked again
    assert (await slash(served, "grants"))[1]["text"] == NO_GRANTS


async def test_slack_revoking_someone_elses_grant_is_refused_and_audited(served: Served) -> None:
    grant = await always_from_slack(served)
    assert (await slash(served, "grants", BOB))[1]["text"] == NO_GRANTS  # alice's, not bob's

    await served.slack_tap(revoke_click(served, grant.id, BOB))
    [replaced] = served.slack.responses
    assert replaced.body["blocks"][0]["text"]["text"].startswith(NOT_GRANT_OWNER)
    await served.slack_tap(revoke_click(served, grant.id, STRANGER))
    assert served.ephemerals(STRANGER) == [NOT_KNOWN]  # a stranger gets no listing

    assert await allowed_by_grant(served)  # still standing
    refused = await audit_events(served, "refused")
    assert [(actor, d["why"], d["grant"]) for actor, d in refused] == [
        ("bob", "not the grant's maker", grant.id),
        (f"slack:{STRANGER[0]}", "not an approver", grant.id),
    ]
    status, answer = await slash(served, "grants", STRANGER)
    assert (status, answer["text"]) == (200, NOT_KNOWN)


async def test_a_slash_command_with_a_bad_signature_is_401_and_lists_nothing(
    served: Served,
) -> None:
    await always_from_slack(served)
    status, answer = await slash(served, "grants", secret="not-the-signing-secret")
    assert status == 401 and "blocks" not in answer
    body = command_body(served, "grants", ALICE)
    stale = slack_headers(served, body)
    stale["X-Slack-Request-Timestamp"] = str(int(served.clock.now().timestamp()) - 301)
    async with served.client.post("/webhooks/slack", data=body, headers=stale) as response:
        assert response.status == 401
    assert served.slack.responses == [] and served.slack.ephemerals == []


async def test_a_command_from_a_channel_named_payload_is_still_a_command(
    served: Served,
) -> None:
    grant = await always_from_slack(served)
    status, answer = await slash(served, "grants", channel_name="payload-alerts")
    assert status == 200 and buttons(answer["blocks"]) == [grant.id]
    status, answer = await slash(served, "payload")
    assert status == 200 and answer["text"].startswith("`payload` is not a tapgate command.")


async def test_slack_help_and_an_unknown_subcommand_say_what_there_is(served: Served) -> None:
    for text in ("", "help", "  HELP  "):
        status, answer = await slash(served, text)
        assert status == 200 and answer["text"].startswith("What you can ask tapgate:")
        assert "`/tapgate grants`: list the grants you made" in answer["text"]
    status, answer = await slash(served, "frobnicate <!channel>")
    assert status == 200
    assert answer["text"].startswith("`frobnicate` is not a tapgate command. What you can ask")
    assert "<!channel>" not in json.dumps(answer)


async def test_a_slack_revoke_is_stored_before_its_200_and_replayed_once(served: Served) -> None:
    grant = await always_from_slack(served)
    click = revoke_click(served, grant.id, ALICE)
    interaction = parse_revoke(click)
    assert interaction is not None
    inbox = served.app[INBOX]
    stored = (_slack_inbox.event_id(click), _slack_inbox.encode(interaction))
    assert _slack_inbox.decode(stored[1]) == dataclasses.replace(interaction, trigger_id=None)
    await inbox.record("slack", [stored])  # acknowledged, then the process died

    later = served.clock.now() + timedelta(seconds=1)
    assert await inbox.replay(received_before=later) == 1
    await until(lambda: len(served.slack.responses) == 1)
    assert await inbox.pending() == 0  # settled by the revoke's own transaction
    assert not await allowed_by_grant(served)
    await inbox.record("slack", [stored])  # and once more: a duplicate, nothing said or done
    assert await inbox.replay(received_before=later) == 1
    await served.slack_tap(click)  # the live delivery arriving after all
    assert len(served.slack.responses) == 1
    assert len(await audit_events(served, "grant_revoked")) == 1


# -- LINE ----------------------------------------------------------------------------


async def test_line_lists_an_approvers_grants_and_revokes_one(served: Served) -> None:
    grant = await always_from_line(served)
    [listing] = await line_text(served, "Grants ")  # as a phone capitalises it
    assert listing["type"] == "flex" and listing["altText"] == "Your active grants (1):"
    assert flex_revokes(listing) == [revoke_postback_data(grant.id)]
    assert "deploy_web with env=staging for ci, until" in json.dumps(listing)

    told = await line_postback(served, revoke_postback_data(grant.id))
    assert told == [
        {"type": "text", "text": "Revoked: deploy_web with env=staging; it will ask again."}
    ]
    assert not await allowed_by_grant(served)
    again = await line_postback(served, revoke_postback_data(grant.id))  # the old button
    assert again == [{"type": "text", "text": GRANT_GONE}]
    assert await line_text(served, "grants") == [{"type": "text", "text": NO_GRANTS}]
    assert len(await audit_events(served, "grant_revoked")) == 1


async def test_line_revoking_someone_elses_grant_is_refused(served: Served) -> None:
    grant = await always_from_line(served)
    assert await line_postback(served, revoke_postback_data(grant.id), BOB) == [
        {"type": "text", "text": NOT_GRANT_OWNER}
    ]
    assert await line_postback(served, revoke_postback_data(grant.id), STRANGER) == [
        {"type": "text", "text": NOT_KNOWN}
    ]
    assert await line_text(served, "grants", STRANGER) == [{"type": "text", "text": NOT_KNOWN}]
    assert await allowed_by_grant(served)
    assert [d["why"] for _, d in await audit_events(served, "refused")] == [
        "not the grant's maker",
        "not an approver",
    ]


async def test_a_redelivered_line_revoke_revokes_once_and_replies_once(served: Served) -> None:
    grant = await always_from_line(served)
    first = line_event("postback", ALICE[1], postback={"data": revoke_postback_data(grant.id)})
    again = {**first, "replyToken": uuid.uuid4().hex, "deliveryContext": {"isRedelivery": True}}
    await line_post(served, first)
    assert await line_post(served, again) == []
    assert len(await audit_events(served, "grant_revoked")) == 1


async def test_line_help_lists_the_commands_and_other_chat_is_ignored(served: Served) -> None:
    [help_text] = await line_text(served, "help")
    assert help_text["text"].startswith("What you can type to tapgate:")
    assert '"grants": your grants (Always allow, Allow for session)' in help_text["text"]
    assert await line_text(served, "show me my grants please") == []


async def test_a_long_line_listing_is_capped_and_says_how_many_more(served: Served) -> None:
    for n in range(12):
        await always_from_line(served, env=f"env-{n:02d}")
        served.clock.advance(1)  # newest first: env-11 .. env-02
    [listing] = await line_text(served, "grants")
    assert len(flex_revokes(listing)) == 10
    assert listing["altText"] == (
        "Your active grants: the newest 10 of 12. Revoke some to see the other 2."
    )
    assert "env=env-11" in json.dumps(listing) and "env=env-01" not in json.dumps(listing)


# -- both: expiry by the clock -------------------------------------------------------


async def test_a_grant_ended_by_the_clock_is_no_longer_listed(served: Served) -> None:
    await always_from_slack(served)
    await always_from_line(served, env="prod", who=BOB)
    assert buttons((await slash(served, "grants"))[1]["blocks"]) != []
    assert flex_revokes((await line_text(served, "grants", BOB))[0]) != []

    served.clock.advance(2 * DAY + 1)
    assert (await slash(served, "grants"))[1]["text"] == NO_GRANTS
    assert await line_text(served, "grants", BOB) == [{"type": "text", "text": NO_GRANTS}]
    assert not await allowed_by_grant(served)


async def test_a_session_grant_is_listed_with_its_session_and_revocable(served: Served) -> None:
    call = ToolCall(tool="deploy_web", arguments={"env": "qa"}, agent="ci", session="s-42")
    ticket = await served.gate.submit(call)
    assert ticket.request is not None
    channel = dm_channel_for(BOB[0])
    await served.slack_tap(click("approve_session", ticket.request.id, BOB, channel))
    [grant] = await served.gate.grants()
    [listing] = await line_text(served, "grants", BOB)
    assert "deploy_web with env=qa in session s-42 for ci, no expiry" in json.dumps(listing)
    told = await line_postback(served, revoke_postback_data(grant.id), BOB)
    assert told[0]["text"] == "Revoked: deploy_web with env=qa in session s-42; it will ask again."
    again = await served.gate.submit(call)
    assert again.request is not None  # asked again in the same session
