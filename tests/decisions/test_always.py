""" "Always allow" from the chat, end to end: signed taps through the real app and fake platforms.

An Always answer grants the request's own fingerprint for ``always_ttl``;
the next identical call is allowed with no message, a call outside the
fingerprint asks, the grant ends by the injected clock, and the cards offer
(and the taps accept) only what the policy lets an approver remember.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import timedelta
from functools import partial
from typing import Any

import pytest
from aiohttp import web

from tapgate.channels.slack.notifier import SlackNotifier
from tapgate.config import Config, parse_config
from tapgate.decisions.remember import offer_for
from tapgate.delivery.recording import RecordingNotifier
from tapgate.gate.clock import ManualClock
from tapgate.gate.models import Request, ToolCall
from tapgate.policy.engine import Policy
from tapgate.server.app import build_app
from tests.channels.line import test_webhook_line as line_test
from tests.channels.slack import test_webhook_slack as slack_test
from tests.fakes import FakeLine, FakeSlack
from tests.fakes.slack import DEFAULT_BOT_TOKEN

DAY = 86400.0

POLICY: dict[str, Any] = {
    "always_ttl": "30d",
    "tools": {
        "deploy_web": {"fingerprint": ["env"]},
        "rotate_keys": {"remember": ["once", "session"]},
        "bash": {"shell": "command"},
    },
    "rules": [
        {"tool": "deploy_web", "action": "ask", "approvers": ["oncall"], "always_ttl": "2d"},
        {"tool": "rotate_keys", "action": "ask", "approvers": ["oncall"]},
        {"tool": "bash", "action": "ask", "approvers": ["oncall"]},
    ],
}


def slack_config(slack_url: str, db_url: str) -> Config:
    raw = slack_test.make_config(slack_url, db_url).model_dump(mode="json", exclude_none=True)
    return _with_policy(raw, db_url)


def _with_policy(raw: dict[str, Any], db_url: str) -> Config:
    raw["policy"] = POLICY
    raw["store"] = {"url": db_url}
    for channel in raw["channels"].values():
        if isinstance(channel, dict):
            for key in ("bot_token", "signing_secret", "channel_access_token", "channel_secret"):
                if key in channel:
                    channel[key] = _SECRETS[key]
    return parse_config(raw, env={})


_SECRETS = {
    "bot_token": DEFAULT_BOT_TOKEN,
    "signing_secret": slack_test.SECRET,
    "channel_access_token": line_test.TOKEN,
    "channel_secret": line_test.SECRET,
}


async def ask(
    served: Any, tool: str = "deploy_web", session: str | None = None, **args: Any
) -> Request:
    call = ToolCall(
        tool=tool, arguments=args or {"env": "staging", "ref": "a1"}, agent="ci", session=session
    )
    ticket = await served.gate.submit(call)
    assert ticket.request is not None, ticket.decision
    request: Request = ticket.request
    return request


@pytest.fixture
async def slack_served(
    db_url: str,
    clock: ManualClock,
    aiohttp_client: Callable[[web.Application], Awaitable[slack_test.Client]],
) -> AsyncIterator[slack_test.Served]:
    async with FakeSlack() as fake:
        config = slack_config(fake.url, db_url)
        offers = partial(offer_for, Policy(config.policy_spec()))
        notifier = SlackNotifier(DEFAULT_BOT_TOKEN, api_base_url=fake.url, timeout=5, offers=offers)
        app = build_app(config, clock=clock, notifiers=[notifier])
        client = await aiohttp_client(app)
        yield slack_test.Served(app=app, client=client, slack=fake, clock=clock)
        await client.close()  # the app stops (its dispatcher too) before the fakes do


@pytest.fixture
def db_url(migrated_sqlite_url: str) -> str:
    return migrated_sqlite_url


def _buttons(message: Any) -> dict[str, dict[str, Any]]:
    return {
        e["action_id"]: e
        for block in message.blocks
        if block["type"] == "actions"
        for e in block["elements"]
    }


async def test_always_from_slack_grants_the_fingerprint_until_it_expires(
    slack_served: slack_test.Served,
) -> None:
    served = slack_served
    request = await ask(served)
    message = await served.posted(request, slack_test.ALICE)
    buttons = _buttons(message)
    assert "tapgate_approve_session" not in buttons  # no session: nothing to key it on
    confirm = buttons["tapgate_approve_always"]["confirm"]["text"]["text"]
    assert "Always: deploy_web with env=staging, 2 days" in confirm
    assert "Always: deploy_web with env=staging, 2 days" in json.dumps(message.blocks)

    tapped = slack_test.click(served, "approve_always", request, message=message)
    assert (await served.post(slack_test.form(tapped)))[0] == 200
    await served.settled()
    decided = await served.gate.get_request(request.id)
    assert (decided.status, decided.scope, decided.resolved_by) == ("approved", "always", "alice")
    [grant] = await served.gate.grants()
    assert (grant.scope, grant.tool, grant.created_by) == ("always", "deploy_web", "alice")
    assert grant.expires_at == served.clock.now() + timedelta(days=2)

    again = await served.gate.submit(
        ToolCall(tool="deploy_web", arguments={"env": "staging", "ref": "b2"}, agent="ci")
    )
    assert again.decision is not None and again.decision.source == "grant"
    outside = await served.gate.submit(
        ToolCall(tool="deploy_web", arguments={"env": "prod", "ref": "b2"}, agent="ci")
    )
    assert outside.request is not None  # another env: asked
    served.clock.advance(2 * DAY + 1)
    expired = await served.gate.submit(
        ToolCall(tool="deploy_web", arguments={"env": "staging", "ref": "c3"}, agent="ci")
    )
    assert expired.request is not None  # the grant ended by the clock: asked again


async def test_a_tool_that_forbids_always_offers_none_and_refuses_a_forged_tap(
    slack_served: slack_test.Served,
) -> None:
    served = slack_served
    request = await ask(served, "rotate_keys", session="s1", key="db")
    message = await served.posted(request, slack_test.ALICE)
    buttons = _buttons(message)
    assert "tapgate_approve_always" not in buttons
    assert "tapgate_approve_session" in buttons
    forged = slack_test.click(served, "approve_always", request, message=message)
    assert (await served.post(slack_test.form(forged)))[0] == 200
    told = await served.told(slack_test.ALICE)
    assert told[-1].startswith("This answer cannot be remembered")
    assert (await served.gate.get_request(request.id)).status == "pending"
    assert await served.gate.grants() == []


async def test_a_hazard_never_gets_an_always(slack_served: slack_test.Served) -> None:
    served = slack_served
    request = await ask(served, "bash", session="s1", command="echo $(cat /etc/passwd)")
    message = await served.posted(request, slack_test.ALICE)
    buttons = _buttons(message)
    assert "tapgate_approve_always" not in buttons and "tapgate_approve_session" not in buttons
    forged = slack_test.click(served, "approve_always", request, message=message)
    await served.post(slack_test.form(forged))
    await served.told(slack_test.ALICE)
    assert await served.gate.grants() == []


# -- LINE ------------------------------------------------------------------------------


@pytest.fixture
async def line_served(
    db_url: str,
    clock: ManualClock,
    aiohttp_client: Callable[[web.Application], Awaitable[line_test.Client]],
) -> AsyncIterator[line_test.Served]:
    async with FakeLine(access_token=line_test.TOKEN) as line:
        raw = line_test.config(line.url, db_url).model_dump(mode="json", exclude_none=True)
        app = build_app(
            _with_policy(raw, db_url), clock=clock, notifiers=[RecordingNotifier("line")]
        )
        client = await aiohttp_client(app)
        yield line_test.Served(app=app, client=client, line=line, clock=clock)
        await client.close()  # the app stops (its dispatcher too) before the fakes do


async def test_always_from_line_grants_the_fingerprint(line_served: line_test.Served) -> None:
    served = line_served
    request = await ask(served)
    item = line_test.tap_event("approve_always", request)
    assert await served.post(line_test.payload(item)) == (200, {"ok": True})
    assert served.replied_to(item) == [f"Approved always - deploy_web ({line_test.short(request)})"]
    [grant] = await served.gate.grants()
    assert (grant.scope, grant.created_by) == ("always", "alice")
    again = await served.gate.submit(
        ToolCall(tool="deploy_web", arguments={"env": "staging", "ref": "z"}, agent="ci")
    )
    assert again.decision is not None and again.decision.source == "grant"
