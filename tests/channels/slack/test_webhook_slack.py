"""The Slack webhook through the real app: signed taps decide, everything else changes nothing.

Every request is signed for real (the v0 HMAC is computed here, independently
of the code under test) and posted form-encoded as ``payload=<json>``, the way
Slack delivers interactions, to ``build_app``'s ``/webhooks/slack``. Approval
messages are really posted to the fake Slack API by the real SlackNotifier,
and rewritten by the dispatcher once decided; ephemerals and modals are what
the fake recorded. Time is a manual clock, signature windows included.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import yaml
from aiohttp import web
from aiohttp.test_utils import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tapgate.channels.slack.notifier import SlackNotifier
from tapgate.channels.slack.text import escape
from tapgate.channels.slack.webhook import (
    SlackWebhook,
    check_signature,
    slack_signature,
    verify_signature,
)
from tapgate.config import Config, parse_config
from tapgate.errors import ConfigError
from tapgate.gate.clock import ManualClock
from tapgate.gate.models import GateEvent, Request, ToolCall
from tapgate.server.app import build_app
from tapgate.server.keys import METRICS
from tests.fakes import FakeSlack, Fault, SlackMessage
from tests.fakes import served as served_world
from tests.fakes.receivers import slack_webhook
from tests.fakes.served import ServedApp, slack_card
from tests.fakes.slack import DEFAULT_APP_TOKEN, DEFAULT_BOT_TOKEN
from tests.fakes.taps import slack_form, slack_headers
from tests.strategies import HEADER_VALUES, JSON

SECRET = "test-slack-signing-secret-0123"
TEAM = "T0TAPGATE"
OTHER_TEAM = "T0ELSEWHERE"
ALICE = "U0ALICE"
BOB = "U0BOB"
CAROL = "U0CAROL"  # an approver, but not of deploy requests
STRANGER = "U0STRANGER"  # nobody tapgate knows
SHARED_CHANNEL = "C0APPROVALS"  # where anyone, approver or not, can see and click a button
NOT_APPROVER = "You are not an approver for this request."

# Slack's "Verifying requests from Slack" example, as python-slack-sdk's tests quote it.
VECTOR_SECRET = b"8f742231b10e8888abcd99yyyzzz85a5"
VECTOR_TS = "1531420618"
VECTOR_BODY = (
    b"token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&"
    b"channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&"
    b"command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2F"
    b"commands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&"
    b"trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
)
VECTOR_SIGNATURE = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"

Client = TestClient[web.Request, web.Application]


def sign(body: bytes, timestamp: int | str, secret: str = SECRET) -> str:
    return slack_headers(secret, body, timestamp)["X-Slack-Signature"]


form = slack_form  # ``payload=<url-quoted JSON>``: how Slack posts an interaction
until = partial(served_world.until, timeout=5.0)  # a hang fails this suite in 5 s


def make_config(
    slack_url: str,
    db_url: str,
    *,
    team_id: str | None = None,
    app_token: str | None = None,
    heartbeat: float = 5.0,
) -> Config:
    slack: dict[str, Any] = {
        "bot_token": DEFAULT_BOT_TOKEN,
        "signing_secret": SECRET,
        "api_base_url": slack_url,
        "timeout": 5,
        "team_id": team_id,
        "app_token": app_token,
    }
    return parse_config(
        {
            "server": {"heartbeat_interval": heartbeat},
            "store": {"url": db_url},
            "approvers": [
                {"name": "alice", "slack": ALICE, "slack_team": TEAM, "groups": ["oncall"]},
                {"name": "bob", "slack": BOB, "slack_team": TEAM, "groups": ["oncall"]},
                {"name": "carol", "slack": CAROL, "slack_team": TEAM},
            ],
            "channels": {"console": {"enabled": False}, "slack": slack},
            "policy": {
                "rules": [
                    {"tool": "deploy", "action": "ask", "approvers": ["oncall"], "timeout": 60},
                    {"tool": "billing", "action": "ask", "approvers": ["carol"]},
                ]
            },
        },
        env={},
    )


@dataclass
class Served(ServedApp):
    """The real app, its test client, the fake Slack API and the manual clock."""

    slack: FakeSlack

    @property
    def webhook(self) -> SlackWebhook:
        return slack_webhook(self.app)

    async def ask(self, tool: str = "deploy", session: str | None = None) -> Request:
        call = ToolCall(tool=tool, arguments={"env": "prod"}, agent="ci", session=session)
        ticket = await self.gate.submit(call)
        assert ticket.request is not None
        return ticket.request

    async def posted(self, request: Request, user: str) -> SlackMessage:
        """The approval message of ``request`` in ``user``'s DM, once the dispatcher sent it."""
        return await slack_card(self.slack, user, f'"value": "{request.id}"', timeout=5.0)

    async def post(
        self, body: bytes, headers: dict[str, str] | None = None, *, at: float | None = None
    ) -> tuple[int, str]:
        if headers is None:
            timestamp = int(self.clock.now().timestamp() if at is None else at)
            headers = slack_headers(SECRET, body, timestamp)
        async with self.client.post("/webhooks/slack", data=body, headers=headers) as response:
            return response.status, await response.text()

    async def settled(self) -> None:
        """Wait until the webhook's background work (taps, ephemerals, modals) is done.

        The task set is private; reading it only decides *when* the test
        looks, never what it asserts.
        """
        await until(lambda: not self.webhook._tasks)

    def ephemerals(self, user: str) -> list[str]:
        return [e.text or "" for e in self.slack.ephemerals if e.user == user]

    async def told(self, user: str, count: int = 1) -> list[str]:
        """The ephemerals ``user`` got, once there are ``count`` of them."""
        await until(lambda: len(self.ephemerals(user)) >= count)
        return self.ephemerals(user)

    def headers(self, body: bytes, **overrides: str | None) -> dict[str, str]:
        """Correct headers for ``body`` now, with ``overrides`` (``None`` drops a header)."""
        timestamp = int(self.clock.now().timestamp())
        headers: dict[str, str | None] = {**slack_headers(SECRET, body, timestamp)}
        headers.update(overrides)
        return {k: v for k, v in headers.items() if v is not None}

    def metric(self, name: str, **labels: str) -> float:
        return self.app[METRICS].registry.get_sample_value(name, labels) or 0.0


def click(
    served: Served,
    action: str,
    request: Request | str,
    *,
    user: str = ALICE,
    team: str | None = TEAM,
    message: SlackMessage | None = None,
) -> dict[str, Any]:
    """A ``block_actions`` payload for one button, shaped like Slack's.

    Without ``message`` the button is in a shared channel, where anyone can click it.
    """
    request_id = request if isinstance(request, str) else request.id
    channel = message.channel if message is not None else SHARED_CHANNEL
    return {
        "type": "block_actions",
        "user": {"id": user, "username": user.lower(), "name": user.lower(), "team_id": team},
        "api_app_id": "A0TAPGATE",
        "token": "legacy-verification-token",
        "container": {
            "type": "message",
            "message_ts": message.ts if message is not None else "1767225600.000100",
            "channel_id": channel,
            "is_ephemeral": False,
        },
        "trigger_id": f"{uuid.uuid4().int % 10**12}.{uuid.uuid4().hex}",
        "team": {"id": team, "domain": "tapgate"},
        "channel": {"id": channel, "name": "directmessage"},
        "response_url": served.slack.response_url(uuid.uuid4().hex),
        "actions": [
            {
                "action_id": f"tapgate_{action}",
                "block_id": f"tapgate:{request_id}",
                "text": {"type": "plain_text", "text": action, "emoji": True},
                "value": request_id,
                "type": "button",
                "action_ts": "1767225600.123456",
            }
        ],
    }


def submission(view: dict[str, Any], reason: str | None, *, user: str = BOB) -> dict[str, Any]:
    """A ``view_submission`` of the modal tapgate opened, as Slack sends it back."""
    return {
        "type": "view_submission",
        "team": {"id": TEAM, "domain": "tapgate"},
        "user": {"id": user, "username": user.lower(), "name": user.lower(), "team_id": TEAM},
        "api_app_id": "A0TAPGATE",
        "token": "legacy-verification-token",
        "trigger_id": f"{uuid.uuid4().int % 10**12}.{uuid.uuid4().hex}",
        "view": {
            "id": "V0000000001",
            "team_id": TEAM,
            "type": "modal",
            "callback_id": view["callback_id"],
            "private_metadata": view["private_metadata"],
            "blocks": view["blocks"],
            "title": view["title"],
            "state": {
                "values": {"reason": {"reason": {"type": "plain_text_input", "value": reason}}}
            },
            "hash": "1767225600.abcdef",
            "app_id": "A0TAPGATE",
        },
        "response_urls": [],
        "is_enterprise_install": False,
    }


async def assert_untouched(served: Served, request: Request) -> None:
    await served.settled()
    current = await served.gate.get_request(request.id)
    assert current.status == "pending"
    assert current.resolved_by is None and current.resolved_at is None


@pytest.fixture
def db_url(migrated_sqlite_url: str) -> str:
    """SQLite only: the store's own suite runs on PostgreSQL too; this one is about Slack."""
    return migrated_sqlite_url


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    async with FakeSlack() as slack:
        yield slack


Serve = Callable[..., Awaitable[Served]]


@pytest.fixture
def serve(
    db_url: str,  # first: the database must outlive the app's shutdown
    clock: ManualClock,
    fake: FakeSlack,
    aiohttp_client: Callable[[web.Application], Awaitable[Client]],
) -> Serve:
    async def start(**options: Any) -> Served:
        notifier = SlackNotifier(DEFAULT_BOT_TOKEN, api_base_url=fake.url, timeout=5)
        config = make_config(fake.url, db_url, **options)
        app = build_app(config, clock=clock, notifiers=[notifier])
        return Served(app=app, client=await aiohttp_client(app), slack=fake, clock=clock)

    return start


@pytest.fixture
async def served(serve: Serve) -> Served:
    return await serve()


# -- the signature, as a pure function -------------------------------------------------


def test_signature_matches_slacks_published_example() -> None:
    assert slack_signature(VECTOR_SECRET, VECTOR_TS, VECTOR_BODY) == VECTOR_SIGNATURE
    now = float(VECTOR_TS)
    for moment in (now, now - 300, now + 300):
        assert verify_signature(
            VECTOR_SECRET, VECTOR_BODY, timestamp=VECTOR_TS, signature=VECTOR_SIGNATURE, now=moment
        )


@pytest.mark.parametrize(
    ("secret", "body", "timestamp", "signature", "now", "why"),
    [
        (VECTOR_SECRET, VECTOR_BODY + b"&", VECTOR_TS, VECTOR_SIGNATURE, 0, "mismatch"),
        (
            b"8f742231b10e8888abcd99yyyzzz85a6",
            VECTOR_BODY,
            VECTOR_TS,
            VECTOR_SIGNATURE,
            0,
            "mismatch",
        ),
        (VECTOR_SECRET, VECTOR_BODY, VECTOR_TS, VECTOR_SIGNATURE.upper(), 0, "mismatch"),
        (VECTOR_SECRET, VECTOR_BODY, VECTOR_TS, VECTOR_SIGNATURE[:-1] + "é", 0, "mismatch"),
        (VECTOR_SECRET, VECTOR_BODY, " " + VECTOR_TS, VECTOR_SIGNATURE, 0, "mismatch"),
        (VECTOR_SECRET, VECTOR_BODY, VECTOR_TS + ".0", VECTOR_SIGNATURE, 0, "mismatch"),
        (VECTOR_SECRET, VECTOR_BODY, "١٥٣١٤٢٠٦١٨", VECTOR_SIGNATURE, 0, "mismatch"),
        (VECTOR_SECRET, VECTOR_BODY, VECTOR_TS, VECTOR_SIGNATURE, 301, "stale"),
        (VECTOR_SECRET, VECTOR_BODY, VECTOR_TS, VECTOR_SIGNATURE, -301, "stale"),
        (VECTOR_SECRET, VECTOR_BODY, None, VECTOR_SIGNATURE, 0, "missing"),
        (VECTOR_SECRET, VECTOR_BODY, VECTOR_TS, None, 0, "missing"),
        (VECTOR_SECRET, VECTOR_BODY, VECTOR_TS, "", 0, "missing"),
        (b"", VECTOR_BODY, VECTOR_TS, slack_signature(b"", VECTOR_TS, VECTOR_BODY), 0, "missing"),
    ],
)
def test_signature_refuses_everything_else(
    secret: bytes, body: bytes, timestamp: str | None, signature: str | None, now: int, why: str
) -> None:
    at = float(VECTOR_TS) + now
    kw: dict[str, Any] = {"timestamp": timestamp, "signature": signature, "now": at}
    assert check_signature(secret, body, **kw) == why
    assert not verify_signature(secret, body, **kw)


# -- taps that decide ------------------------------------------------------------------


async def test_an_approve_tap_answers_at_once_decides_and_the_message_is_updated(
    served: Served,
) -> None:
    request = await served.ask()
    message = await served.posted(request, ALICE)
    other = await served.posted(request, BOB)
    waiter = asyncio.create_task(served.gate.wait(request.id))
    started = time.monotonic()
    status, body = await served.post(form(click(served, "approve", request, message=message)))
    assert (status, body) == (200, "")
    assert time.monotonic() - started < 3  # Slack's deadline for the acknowledgement
    decision = await asyncio.wait_for(waiter, 5)
    assert decision is not None
    assert (decision.status, decision.decided_by, decision.verdict) == (
        "approved",
        "alice",
        "allow",
    )
    # The dispatcher, not the webhook, rewrites every message of the request.
    both = (message, other)
    await until(lambda: all("Approved by alice" in (m.text or "") for m in both))
    assert all("tapgate_approve" not in json.dumps(m.blocks) for m in both)
    assert served.slack.ephemerals == []  # the updated message is the confirmation
    assert served.metric("tapgate_tap_to_decision_seconds_count") == 1
    assert served.slack.requests_to("auth.test") == []  # no Slack call before the answer


async def test_allow_for_session_approves_and_creates_a_session_grant(served: Served) -> None:
    request = await served.ask(session="s1")
    waiter = asyncio.create_task(served.gate.wait(request.id))
    status, _ = await served.post(form(click(served, "approve_session", request, user=BOB)))
    assert status == 200
    decision = await asyncio.wait_for(waiter, 5)
    assert decision is not None and (decision.status, decision.decided_by) == ("approved", "bob")
    grants = await served.gate.grants()
    assert [(g.scope, g.session, g.tool, g.created_by) for g in grants] == [
        ("session", "s1", "deploy", "bob")
    ]
    assert (await served.gate.get_request(request.id)).scope == "session"


async def test_deny_opens_a_reason_modal_and_the_reason_reaches_the_agent(served: Served) -> None:
    request = await served.ask()
    waiter = asyncio.create_task(served.gate.wait(request.id))
    tapped = click(served, "deny", request, user=BOB)
    assert (await served.post(form(tapped)))[0] == 200
    await until(lambda: len(served.slack.views) == 1)
    opened = served.slack.views[0]
    assert opened.trigger_id == tapped["trigger_id"]
    assert opened.view["callback_id"] == "tapgate_deny"
    assert request.id in opened.view["private_metadata"]
    assert not waiter.done()  # the Deny button alone decides nothing

    reason = "Not during the release freeze.\nTry again on Monday."
    status, body = await served.post(form(submission(opened.view, reason)))
    assert (status, body) == (200, "")  # an empty 200 closes the modal
    assert json.loads(opened.view["private_metadata"])["c"] == SHARED_CHANNEL
    decision = await asyncio.wait_for(waiter, 5)
    assert decision is not None
    assert (decision.status, decision.decided_by, decision.reason) == ("denied", "bob", reason)
    await served.settled()
    assert served.slack.ephemerals == []


async def test_a_deny_without_a_reason_still_denies(served: Served) -> None:
    request = await served.ask()
    await served.post(form(click(served, "deny", request, user=BOB)))
    await until(lambda: len(served.slack.views) == 1)
    await served.post(form(submission(served.slack.views[0].view, "   ")))
    decision = await asyncio.wait_for(served.gate.wait(request.id), 5)
    assert decision is not None and decision.status == "denied"
    assert decision.reason == "denied by bob"


async def test_a_modal_submitted_after_the_request_was_decided_is_told_so(served: Served) -> None:
    request = await served.ask()
    await served.post(form(click(served, "deny", request, user=BOB)))
    await until(lambda: len(served.slack.views) == 1)
    await served.post(form(click(served, "approve", request, user=ALICE)))
    await until(lambda: served.metric("tapgate_tap_to_decision_seconds_count") == 1)

    assert (await served.post(form(submission(served.slack.views[0].view, "no"))))[0] == 200
    assert await served.told(BOB) == ["Already approved by alice at 00:00 UTC - deploy."]
    assert served.slack.ephemerals[0].channel == SHARED_CHANNEL  # from the modal's metadata
    current = await served.gate.get_request(request.id)
    assert (current.status, current.resolved_by) == ("approved", "alice")


async def test_a_modal_submitted_after_the_deadline_expires_the_request_as_a_late_tap_does(
    serve: Serve,
) -> None:
    """It was left pending until the next sweep; a tap at the same moment expires it at once."""
    served = await serve(heartbeat=3600)  # no sweep (nor a waiter's timer) expires it meanwhile
    request = await served.ask()
    await served.post(form(click(served, "deny", request, user=BOB)))
    await until(lambda: len(served.slack.views) == 1)
    served.clock.advance(61)  # the rule's timeout is 60 s
    assert (await served.post(form(submission(served.slack.views[0].view, "no"))))[0] == 200
    expired = f"This request expired - deploy (request {request.id[:8]})."
    assert await served.told(BOB) == [escape(expired)]
    current = await served.gate.get_request(request.id)
    assert (current.status, current.resolved_by) == ("expired", "timeout")


# -- taps that are refused ---------------------------------------------------------------


async def test_a_non_approver_is_told_ephemerally_and_nothing_changes(served: Served) -> None:
    request = await served.ask()
    for user in (STRANGER, CAROL):  # CAROL approves billing requests, not this one
        assert (await served.post(form(click(served, "approve", request, user=user))))[0] == 200
        assert await served.told(user) == [NOT_APPROVER]
    assert {e.channel for e in served.slack.ephemerals} == {SHARED_CHANNEL}
    await assert_untouched(served, request)
    audit = await served.gate.store.audit_log(request_id=request.id)
    refused = [a for a in audit if a.event == "refused"]
    assert [a.actor for a in refused] == ["slack:U0STRANGER", "carol"]


async def test_a_deny_by_a_non_approver_opens_no_modal(served: Served) -> None:
    request = await served.ask()
    await served.post(form(click(served, "deny", request, user=CAROL)))
    assert await served.told(CAROL) == [NOT_APPROVER]
    assert served.slack.views == []
    await assert_untouched(served, request)
    audit = await served.gate.store.audit_log(request_id=request.id)
    assert [(a.event, a.actor, a.detail["why"]) for a in audit if a.event == "refused"] == [
        ("refused", "carol", "not an approver")
    ]


async def test_a_deny_on_a_decided_request_opens_no_modal(served: Served) -> None:
    request = await served.ask()
    await served.gate.resolve(request.id, "approve", by="alice")
    await served.post(form(click(served, "deny", request, user=BOB)))
    assert await served.told(BOB) == ["Already approved by alice at 00:00 UTC - deploy."]
    assert served.slack.views == []


async def test_the_ack_does_not_wait_for_the_ephemeral(served: Served) -> None:
    request = await served.ask()
    served.slack.script("chat.postEphemeral", Fault.timeout(1.0))
    assert (await served.post(form(click(served, "approve", request, user=STRANGER))))[0] == 200
    assert served.slack.ephemerals == []  # answered while Slack was still busy
    assert await served.told(STRANGER) == [NOT_APPROVER]


async def test_close_lets_the_work_in_flight_finish(served: Served) -> None:
    request = await served.ask()
    served.slack.script("chat.postEphemeral", Fault.timeout(0.5))
    assert (await served.post(form(click(served, "approve", request, user=STRANGER))))[0] == 200
    assert served.slack.ephemerals == []
    await served.webhook.close()  # what the app's shutdown does
    assert served.ephemerals(STRANGER) == [NOT_APPROVER]
    assert not served.webhook._tasks


async def test_a_failed_ephemeral_falls_back_to_the_response_url(served: Served) -> None:
    request = await served.ask()
    failure = Fault.status(200, body={"ok": False, "error": "channel_not_found"})
    served.slack.script("chat.postEphemeral", failure)
    tapped = click(served, "approve", request, user=STRANGER)
    await served.post(form(tapped))
    await until(lambda: bool(served.slack.responses))
    [response] = served.slack.responses
    assert tapped["response_url"].endswith(response.name)
    assert response.body == {
        "text": NOT_APPROVER,
        "response_type": "ephemeral",
        "replace_original": False,
    }


async def test_a_second_tap_is_told_who_decided_first(served: Served) -> None:
    request = await served.ask()
    await served.post(form(click(served, "approve", request, user=ALICE)))
    await until(lambda: served.metric("tapgate_tap_to_decision_seconds_count") == 1)
    await served.post(form(click(served, "approve_session", request, user=BOB)))
    assert await served.told(BOB) == ["Already approved by alice at 00:00 UTC - deploy."]
    assert await served.gate.grants() == []


async def test_a_tap_after_expiry_is_refused(served: Served) -> None:
    request = await served.ask()
    served.clock.advance(61)  # the rule's timeout is 60 s; no sweep needs to have run
    await served.post(form(click(served, "approve", request, user=ALICE)))
    expired = f"This request expired - deploy (request {request.id[:8]})."
    assert await served.told(ALICE) == [escape(expired)]  # an id's "_" shows as a lookalike
    current = await served.gate.get_request(request.id)
    assert (current.status, current.resolved_by) == ("expired", "timeout")


async def test_a_tap_on_an_unknown_request_is_answered(served: Served) -> None:
    await served.post(form(click(served, "approve", "no-such-request", user=ALICE)))
    await served.post(form(click(served, "deny", "no-such-request-2", user=ALICE)))
    told = await served.told(ALICE, 2)
    assert told == ["This request does not exist (any more)."] * 2
    assert served.slack.views == []


@pytest.mark.parametrize("pinned", [True, False], ids=["team_id", "slack_team"])
async def test_a_tap_from_another_workspace_is_refused(serve: Serve, pinned: bool) -> None:
    """Slack user ids are unique per workspace only: the same id elsewhere is someone else."""
    served = await serve(team_id=TEAM if pinned else None)
    request = await served.ask()
    for action in ("approve", "deny"):
        tapped = click(served, action, request, user=ALICE, team=OTHER_TEAM)
        assert (await served.post(form(tapped)))[0] == 200
    assert await served.told(ALICE, 2) == [NOT_APPROVER, NOT_APPROVER]
    assert served.slack.views == []
    await assert_untouched(served, request)
    rejected = served.metric(
        "tapgate_webhook_rejections_total", platform="slack", reason="workspace"
    )
    assert rejected == (2 if pinned else 0)


@pytest.mark.parametrize("pinned", [True, False], ids=["team_id", "slack_team"])
@pytest.mark.parametrize("home", [OTHER_TEAM, None], ids=["other-home", "no-home"])
async def test_a_slack_connect_tap_is_judged_by_the_tappers_home_workspace(
    serve: Serve, pinned: bool, home: str | None
) -> None:
    """In a shared channel ``team.id`` is the message's workspace, not the tapper's.

    Only ``user.team_id`` says where the person is from; when it is another
    workspace, or missing, the tap must not pass for one of ours.
    """
    served = await serve(team_id=TEAM if pinned else None)
    request = await served.ask()
    tapped = click(served, "approve", request, user=ALICE, team=TEAM)
    tapped["user"] = {k: v for k, v in tapped["user"].items() if k != "team_id"}
    if home is not None:
        tapped["user"]["team_id"] = home
    assert (await served.post(form(tapped)))[0] == 200
    assert await served.told(ALICE, 1) == [NOT_APPROVER]
    await assert_untouched(served, request)


async def test_a_pinned_workspace_still_accepts_its_own_approvers(serve: Serve) -> None:
    served = await serve(team_id=TEAM)
    request = await served.ask()
    await served.post(form(click(served, "approve", request, user=BOB)))
    decision = await asyncio.wait_for(served.gate.wait(request.id), 5)
    assert decision is not None and decision.decided_by == "bob"


async def test_fifty_concurrent_taps_make_exactly_one_decision(served: Served) -> None:
    request = await served.ask()
    resolved: list[GateEvent] = []
    served.gate.bus.subscribe(lambda e: resolved.append(e) if e.kind == "resolved" else None)
    actions = ("approve", "approve_session")
    taps = [
        form(click(served, actions[n % 2], request, user=(ALICE, BOB)[n // 2 % 2]))
        for n in range(50)
    ]
    statuses = await asyncio.gather(*(served.post(body) for body in taps))
    assert [s for s, _ in statuses] == [200] * 50
    await served.settled()
    assert len(resolved) == 1
    decided = await served.gate.get_request(request.id)
    assert decided.status == "approved" and decided.resolved_by in ("alice", "bob")
    late = [e.text or "" for e in served.slack.ephemerals]
    assert len(late) == 49
    assert all(text.startswith(f"Already approved by {decided.resolved_by} at") for text in late)
    assert served.metric("tapgate_tap_to_decision_seconds_count") == 1


# -- requests that are not Slack's, or not well-formed -----------------------------------


@pytest.mark.parametrize(
    "change",
    [
        {"X-Slack-Signature": None},
        {"X-Slack-Request-Timestamp": None},
        {"X-Slack-Signature": "v0=" + "0" * 64},
        {"X-Slack-Signature": "v1=whatever"},
        {"X-Slack-Request-Timestamp": "not-a-number"},
    ],
    ids=["no-signature", "no-timestamp", "wrong-signature", "other-scheme", "bad-timestamp"],
)
async def test_an_unsigned_request_is_401_and_changes_nothing(
    served: Served, change: dict[str, str | None]
) -> None:
    request = await served.ask()
    body = form(click(served, "approve", request, user=ALICE))
    assert (await served.post(body, served.headers(body, **change)))[0] == 401
    await assert_untouched(served, request)
    assert served.slack.ephemerals == []
    assert served.metric("tapgate_webhook_rejections_total", platform="slack", reason="signature")


async def test_a_compressed_body_is_415(served: Served) -> None:
    """A body claiming gzip: refused before any check (the server decodes no coding)."""
    request = await served.ask()
    body = form(click(served, "approve", request, user=ALICE))
    headers = {**served.headers(body), "Content-Encoding": "gzip"}
    assert (await served.post(body, headers))[0] == 415
    await assert_untouched(served, request)
    assert served.metric("tapgate_webhook_rejections_total", platform="slack", reason="payload")


@pytest.mark.parametrize("age", [301, -301, 3600])
async def test_a_correctly_signed_but_stale_request_is_401(served: Served, age: int) -> None:
    """A replay of a real tap, captured more than five minutes ago, is refused."""
    request = await served.ask()
    body = form(click(served, "approve", request, user=ALICE))
    status, _ = await served.post(body, at=served.clock.now().timestamp() - age)
    assert status == 401
    await assert_untouched(served, request)


async def test_a_body_signed_with_another_secret_is_401(served: Served) -> None:
    request = await served.ask()
    body = form(click(served, "approve", request, user=ALICE))
    timestamp = int(served.clock.now().timestamp())
    headers = served.headers(body, **{"X-Slack-Signature": sign(body, timestamp, "other-secret")})
    assert (await served.post(body, headers))[0] == 401
    await assert_untouched(served, request)


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"payload=",
        b"payload=not-json",
        b"payload=%5B1%2C2%5D",  # a JSON list
        b"payload=%7B%22type%22%3A",  # truncated JSON
        b"payload=" + b"%5B" * 5000,  # absurd nesting
        b"\xff\xfe payload",  # not UTF-8
        b'{"type": "block_actions", "actions": "nope"}',
        b'{"type": "view_submission", "view": 5}',
        b'{"type": "block_actions", "user": 5, "team": [1]}',
    ],
)
async def test_a_signed_but_malformed_body_is_4xx_and_changes_nothing(
    served: Served, body: bytes
) -> None:
    request = await served.ask()
    status, _ = await served.post(body)
    assert 400 <= status < 500
    await assert_untouched(served, request)


async def test_a_reason_no_store_can_encode_is_400_and_decides_nothing(served: Served) -> None:
    """A lone surrogate (a JSON escape) in a typed reason failed the tap's INSERT: a 503."""
    request = await served.ask()
    assert (await served.post(form(click(served, "deny", request, user=BOB))))[0] == 200
    await until(lambda: len(served.slack.views) == 1)
    status, _ = await served.post(form(submission(served.slack.views[0].view, "no \ud800")))
    assert status == 400
    await assert_untouched(served, request)


async def test_a_tapgate_button_with_an_unreadable_value_is_400(served: Served) -> None:
    request = await served.ask()
    tapped = click(served, "approve", request, user=ALICE)
    tapped["actions"][0]["value"] = "../../etc/passwd"
    assert (await served.post(form(tapped)))[0] == 400
    del tapped["user"]
    assert (await served.post(form(tapped)))[0] == 400
    await assert_untouched(served, request)
    assert served.metric("tapgate_webhook_rejections_total", platform="slack", reason="payload")


async def test_an_unknown_action_is_left_to_bolt(served: Served) -> None:
    request = await served.ask()
    tapped = click(served, "approve", request, user=ALICE)
    tapped["actions"][0]["action_id"] = "someone_elses_button"
    assert (await served.post(form(tapped)))[0] == 404
    await assert_untouched(served, request)


async def test_an_empty_signing_secret_is_refused(served: Served) -> None:
    with pytest.raises(ValueError, match="signing secret"):
        SlackWebhook(gate=served.gate, signing_secret="", bot_token=DEFAULT_BOT_TOKEN)


# -- Socket Mode ------------------------------------------------------------------------


async def test_socket_mode_receives_taps_without_a_public_route(
    serve: Serve, fake: FakeSlack
) -> None:
    served = await serve(app_token=DEFAULT_APP_TOKEN)
    await fake.wait_for_socket()
    request = await served.ask()
    waiter = asyncio.create_task(served.gate.wait(request.id))
    envelope = {
        "envelope_id": "e-1",
        "type": "interactive",
        "accepts_response_payload": False,
        "payload": click(served, "approve", request, user=ALICE),
    }
    await fake.socket_send(envelope)
    assert await fake.wait_for_socket_ack("e-1") == {"envelope_id": "e-1"}
    decision = await asyncio.wait_for(waiter, 5)
    assert decision is not None and decision.decided_by == "alice"
    assert (await served.post(b"payload=%7B%7D"))[0] in (404, 405)  # no HTTP route at all

    await served.webhook.close()
    await fake.wait_for_socket(connected=False)
    await served.webhook.close()  # idempotent: the app closes it again on shutdown


async def test_socket_mode_refuses_a_reason_no_store_can_encode_as_http_does(
    serve: Serve, fake: FakeSlack, caplog: pytest.LogCaptureFixture
) -> None:
    """Socket Mode hands bolt the envelope's JSON without ``bolt_request``: the lone
    surrogate reached the tap's INSERT, which failed (an error logged, no refusal counted)."""
    served = await serve(app_token=DEFAULT_APP_TOKEN)
    await fake.wait_for_socket()
    request = await served.ask()

    async def send(envelope_id: str, payload: dict[str, Any]) -> None:
        envelope = {"envelope_id": envelope_id, "type": "interactive", "payload": payload}
        await fake.socket_send(envelope)

    await send("e-deny", click(served, "deny", request, user=BOB))
    await fake.wait_for_socket_ack("e-deny")
    await until(lambda: len(fake.views) == 1)
    await send("e-reason", submission(fake.views[0].view, "no \ud800"))
    await until(
        lambda: (
            served.metric("tapgate_webhook_rejections_total", platform="slack", reason="payload")
            == 1
        )
    )
    assert not [a for a in fake.socket_acks if a.get("envelope_id") == "e-reason"]  # not acked
    await assert_untouched(served, request)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


async def test_socket_mode_with_a_wrong_token_fails_to_start(
    served: Served, fake: FakeSlack
) -> None:
    webhook = SlackWebhook(
        gate=served.gate, signing_secret=SECRET, bot_token=DEFAULT_BOT_TOKEN, api_base_url=fake.url
    )
    assert fake.requests == []  # constructing contacts nothing
    with pytest.raises(ConfigError, match="app-level token: invalid_auth"):
        await webhook.start_socket_mode("xapp-wrong")
    assert fake.socket_connections == 0
    await webhook.close()


# -- the app manifest ------------------------------------------------------------------


def test_the_app_manifest_points_at_this_webhook_with_the_scopes_tapgate_uses() -> None:
    manifest = Path(__file__).parents[3] / "docs" / "slack-app-manifest.yaml"
    data = yaml.safe_load(manifest.read_text(encoding="utf-8"))
    interactivity = data["settings"]["interactivity"]
    assert interactivity == {"is_enabled": True, "request_url": "https://YOUR-HOST/webhooks/slack"}
    assert data["settings"]["socket_mode_enabled"] is False
    assert data["oauth_config"]["scopes"]["bot"] == [
        "chat:write",
        "im:write",
        "im:history",
        "commands",
    ]
    assert data["display_information"]["name"] == "tapgate"
    [command] = data["features"]["slash_commands"]  # /tapgate grants | inbox, same signed URL
    assert (command["command"], command["url"]) == ("/tapgate", interactivity["request_url"])
    assert "inbox" in command["usage_hint"]


# -- anything at all: never a 5xx, never a change -----------------------------------------
#
# One app serves every example of a test: building the app per example would
# be far slower, and sharing it makes the claim stronger, since the pending
# request must survive all examples in a row. pytest-asyncio runs each example
# of an async @given test in the fixture's event loop, so the function-scoped
# fixture is reused on purpose, and each example awaits the app directly.

HEADER_NAMES = st.sampled_from(
    [
        "X-Slack-Signature",
        "X-Slack-Request-Timestamp",
        "Content-Type",
        "X-Slack-Retry-Num",
        "X-Other",
    ]
)
SHARED = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@pytest.fixture
async def pending(served: Served) -> tuple[Served, Request]:
    return served, await served.ask()


@SHARED
@given(body=st.binary(max_size=512), headers=st.dictionaries(HEADER_NAMES, HEADER_VALUES))
async def test_arbitrary_unsigned_input_is_always_401(
    pending: tuple[Served, Request], body: bytes, headers: dict[str, str]
) -> None:
    served, request = pending
    status, _ = await served.post(body, headers)
    assert status == 401
    await assert_untouched(served, request)


def _mostly(right: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``right`` three times in four, arbitrary JSON otherwise."""
    return st.sampled_from([True, True, True, False]).flatmap(lambda ok: right if ok else JSON)


def _payloads(request: Request) -> st.SearchStrategy[Any]:
    """Interaction-like objects, often well-formed, from people who may not decide ``request``.

    Each field is usually the right shape and sometimes arbitrary JSON, so the
    examples range from a stranger's perfectly shaped tap (200, refused) to
    nonsense (4xx).
    """
    user = st.fixed_dictionaries(
        {"id": _mostly(st.sampled_from([STRANGER, CAROL]))},
        optional={"team_id": _mostly(st.sampled_from([TEAM, OTHER_TEAM]))},
    )
    action = st.fixed_dictionaries(
        {
            "action_id": _mostly(st.sampled_from(["tapgate_approve", "tapgate_deny", "x"])),
            "value": _mostly(st.just(request.id)),
        }
    )
    metadata = json.dumps({"r": request.id, "c": SHARED_CHANNEL})
    view = st.fixed_dictionaries(
        {
            "type": _mostly(st.just("modal")),
            "callback_id": _mostly(st.just("tapgate_deny")),
            "private_metadata": _mostly(st.just(metadata)),
        },
        optional={"state": JSON},
    )
    return st.fixed_dictionaries(
        {
            "type": _mostly(st.sampled_from(["block_actions", "view_submission", "shortcut"])),
            "user": _mostly(user),
            "actions": _mostly(st.lists(action, min_size=1, max_size=2)),
        },
        optional={
            "team": _mostly(st.fixed_dictionaries({"id": st.just(TEAM)})),
            "view": _mostly(view),
            "container": _mostly(st.fixed_dictionaries({"channel_id": st.just(SHARED_CHANNEL)})),
            "trigger_id": _mostly(st.just("1.2.3")),
        },
    )


@SHARED
@given(draw=st.data())
async def test_arbitrary_signed_input_is_never_5xx_and_decides_nothing(
    pending: tuple[Served, Request], draw: st.DataObject
) -> None:
    served, request = pending
    document = draw.draw(_payloads(request) | JSON)
    encoded = draw.draw(st.sampled_from(["form", "json", "raw"]))
    if encoded == "raw":
        body = draw.draw(st.binary(max_size=256))
    else:
        body = form(document) if encoded == "form" else json.dumps(document).encode()
    status, _ = await served.post(body)
    assert status < 500
    await assert_untouched(served, request)
    assert served.slack.views == []


async def test_a_late_tap_is_told_with_the_tool_name_made_inert(served: Served) -> None:
    """An ephemeral names the tool: Slack must read no mention and no formatting in it."""
    request = await served.ask(tool="show_<!channel>_*bold*")
    await served.gate.resolve(request.id, "deny", by="bob")
    assert (await served.post(form(click(served, "approve", request, user=ALICE))))[0] == 200
    [told] = await served.told(ALICE)
    assert "<!channel>" not in told and "&lt;!channel&gt;" in told
    assert not set("*_~`") & set(told.split(" - ", 1)[1]), told  # the name's markers are inert
