"""One card per batch, through the real server with the fake Slack and LINE APIs.

An agent submits a batch over HTTP (``POST /v1/tool-call-batches``); the real
dispatcher sends one Slack message and one LINE message per approver through
the real notifiers to the fakes; approvers tap, signed for real, on
``/webhooks/slack`` and ``/webhooks/line``; the agent's batch long-poll
answers. What a tap means is core.taps (``tap_batch``); these tests check the
whole path.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient
from sqlalchemy import func, select

from tapgate.channels.slack.text import escape
from tapgate.config import Config, parse_config
from tapgate.gate.clock import ManualClock
from tapgate.gate.models import Request
from tapgate.server.app import build_app
from tapgate.server.keys import STORE
from tapgate.store.schema import outbox
from tests.fakes import FakeLine, FakeSlack, SlackMessage, dm_channel_for
from tests.fakes.receivers import line_webhook, slack_webhook
from tests.fakes.served import (
    AGENT_TOKEN,
    ALICE,
    BOB,
    CAROL,
    LINE_SECRET,
    LINE_TOKEN,
    SLACK_SECRET,
    TEAM,
    ServedApp,
    channels,
    click,
    until,
)
from tests.fakes.taps import line_body, line_event, line_headers, slack_form, slack_headers

BOT = "U0123456789abcdef0123456789abcdef"

Client = TestClient[web.Request, web.Application]


def make_config(slack_url: str, line_url: str, db_url: str) -> Config:
    people: tuple[tuple[str, tuple[str, str], list[str]], ...] = (
        ("alice", ALICE, ["oncall"]),
        ("bob", BOB, ["oncall"]),
        ("carol", CAROL, []),  # an approver, but not of deploys
    )
    return parse_config(
        {
            "server": {"max_wait": 60, "heartbeat_interval": 3600},
            "store": {"url": db_url},
            "agents": [{"name": "ci", "token": AGENT_TOKEN}],
            "approvers": [
                {"name": name, "slack": ids[0], "slack_team": TEAM, "line": ids[1], "groups": g}
                for name, ids, g in people
            ],
            "channels": channels(slack_url=slack_url, line_url=line_url),
            "policy": {
                "tools": {"read_file": {"risk": "read_only"}, "drop_db": {"risk": "destructive"}},
                "rules": [
                    {"tool": "deploy", "action": "ask", "approvers": ["oncall"], "timeout": 600},
                    {"tool": "billing", "action": "ask", "approvers": ["carol"], "timeout": 600},
                ],
            },
        },
        env={},
    )


@dataclass
class Served(ServedApp):
    """The real app, its client, both fake platforms and the manual clock."""

    slack: FakeSlack
    line: FakeLine

    async def submit(self, calls: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
        body = {"calls": calls, "session": "s1", **fields}
        async with self.client.post(
            "/v1/tool-call-batches", json=body, headers={"Authorization": f"Bearer {AGENT_TOKEN}"}
        ) as response:
            answer: dict[str, Any] = await response.json()
            assert response.status == 201, answer
            return answer

    async def poll(self, batch_id: str, wait: float = 30) -> dict[str, Any]:
        async with self.client.get(
            f"/v1/tool-call-batches/{batch_id}?wait={wait}",
            headers={"Authorization": f"Bearer {AGENT_TOKEN}"},
        ) as response:
            answer: dict[str, Any] = await response.json()
            assert response.status == 200, answer
            return answer

    def card(self, user: tuple[str, str]) -> SlackMessage:
        channel = dm_channel_for(user[0])
        found = [m for m in self.slack.messages.values() if m.channel == channel]
        assert len(found) == 1, found
        return found[0]

    async def cards_sent(self, people: int) -> None:
        await until(lambda: len(self.slack.posts) >= people and len(self.line.pushes) >= people)

    async def outbox_rows(self) -> int:
        query = select(func.count()).select_from(outbox)
        return int(await self.app[STORE].run(lambda c: c.execute(query).scalar() or 0))

    async def slack_tap(self, payload: dict[str, Any]) -> None:
        body = slack_form(payload)
        timestamp = int(self.clock.now().timestamp())
        headers = slack_headers(SLACK_SECRET, body, timestamp)
        async with self.client.post("/webhooks/slack", data=body, headers=headers) as response:
            assert response.status == 200, await response.text()
        await until(lambda: not slack_webhook(self.app)._tasks)  # only decides when to look

    async def line_tap(self, data: str, user: tuple[str, str] = ALICE) -> str:
        """Post a signed postback; the text of LINE's reply to it."""
        event = line_event("postback", user[1], postback={"data": data})
        body = line_body(event, destination=BOT)
        headers = line_headers(LINE_SECRET, body)
        async with self.client.post("/webhooks/line", data=body, headers=headers) as response:
            assert response.status == 200
        await line_webhook(self.app).settled()
        told = [
            m["text"]
            for r in self.line.replies
            if r.reply_token == event["replyToken"]
            for m in r.messages
        ]
        return told[0] if told else ""

    def ephemerals(self, user: tuple[str, str]) -> list[str]:
        """What ``user`` was told, as sent: Slack mrkdwn, so an id's "_" is a lookalike."""
        return [e.text or "" for e in self.slack.ephemerals if e.user == user[0]]


@pytest.fixture
def db_url(migrated_sqlite_url: str) -> str:
    return migrated_sqlite_url


@pytest.fixture
async def served(
    db_url: str,  # first: the database must outlive the app's shutdown
    clock: ManualClock,
    aiohttp_client: Callable[[web.Application], Awaitable[Client]],
) -> AsyncIterator[Served]:
    async with FakeSlack() as slack, FakeLine(access_token=LINE_TOKEN) as line:
        app = build_app(make_config(slack.url, line.url, db_url), clock=clock)
        client = await aiohttp_client(app)
        yield Served(app=app, client=client, slack=slack, line=line, clock=clock)
        await client.close()  # the app stops (its dispatcher too) before the fakes do


FOUR = [
    {"tool": "read_file", "arguments": {"path": "README.md"}},
    {"tool": "drop_db", "arguments": {"name": "prod"}},
    {"tool": "deploy", "arguments": {"env": "staging"}},
    {"tool": "deploy", "arguments": {"env": "prod", "api_key": "sk-live-abcdefghijklmnop"}},
]


async def four(served: Served) -> tuple[str, list[str]]:
    """Submit the batch of four (allowed, denied, two asks); its id and the two asks' ids."""
    body = await served.submit(FOUR)
    asks = [c["id"] for c in body["calls"] if c["decision"] == "pending"]
    assert len(asks) == 2
    await served.cards_sent(2)
    return body["id"], asks


async def statuses(served: Served, ids: list[str]) -> list[Request]:
    return [await served.gate.get_request(i) for i in ids]


# -- one card per approver per channel --------------------------------------------------


async def test_a_batch_is_one_slack_and_one_line_message_per_approver(served: Served) -> None:
    batch_id, asks = await four(served)
    assert await served.outbox_rows() == 4  # alice and bob × Slack and LINE
    for person in (ALICE, BOB):
        card = served.card(person)
        text = json.dumps(card.blocks)
        assert all(f'"value": "{rid}"' in text for rid in asks)  # per-call buttons
        assert f'"value": "{batch_id}"' in text and "tapgate_approve_all" in text
        assert "sk-live" not in text  # masked, as on a single card
        [pushed] = served.line.pushed_to(person[1])
        data = json.dumps(pushed)
        assert f"v=1&a=approve_all&b={batch_id}" in data
        assert all(f"v=1&a=approve&r={rid}" in data for rid in asks)
    assert len(served.slack.posts) == 2 and len(served.line.pushes) == 2
    assert not served.line.pushed_to(CAROL[1])


async def test_approve_all_resolves_every_ask_and_the_long_poll_answers(served: Served) -> None:
    batch_id, asks = await four(served)
    poll = asyncio.create_task(served.poll(batch_id))
    card = served.card(ALICE)
    await served.slack_tap(click("approve_all", batch_id, ALICE, card.channel))
    polled = await asyncio.wait_for(poll, 10)
    assert polled["status"] == "decided"
    assert [c["decision"] for c in polled["calls"]] == ["allow", "deny", "allow", "allow"]
    assert {r.resolved_by for r in await statuses(served, asks)} == {"alice"}
    assert served.ephemerals(ALICE) == [escape(f"Batch {batch_id[:8]}: 2 approved.")]
    # Both cards are rewritten once the wave of decisions is in.
    await until(lambda: any(u.ts == card.ts for u in served.slack.updates))
    await until(lambda: "Approve all" not in json.dumps(served.card(BOB).blocks))
    assert "Approved by alice" in json.dumps(served.card(BOB).blocks)


async def test_deny_all_asks_for_a_reason_and_denies_with_it(served: Served) -> None:
    batch_id, asks = await four(served)
    card = served.card(BOB)
    await served.slack_tap(click("deny_all", batch_id, BOB, card.channel))
    await until(lambda: len(served.slack.views) == 1)
    view = served.slack.views[0].view
    assert view["callback_id"] == "tapgate_deny_all"
    assert all(r.is_pending for r in await statuses(served, asks))
    submitted = {
        "type": "view_submission",
        "user": {"id": BOB[0], "team_id": TEAM},
        "view": {
            "type": "modal",
            "callback_id": view["callback_id"],
            "private_metadata": view["private_metadata"],
            "state": {"values": {"reason": {"reason": {"value": "not on a Friday"}}}},
        },
    }
    await served.slack_tap(submitted)
    for request in await statuses(served, asks):
        assert (request.status, request.resolved_by) == ("denied", "bob")
        assert request.resolution_reason == "not on a Friday"
    assert served.ephemerals(BOB) == [escape(f"Batch {batch_id[:8]}: 2 denied.")]


async def test_per_call_taps_on_a_batch_card_decide_one_call_each(served: Served) -> None:
    batch_id, (first, second) = await four(served)
    assert await served.line_tap(f"v=1&a=approve&r={first}", ALICE) == (
        f"Approved - deploy (request {first[:8]})"
    )
    card = served.card(ALICE)
    await until(lambda: any(u.ts == card.ts for u in served.slack.updates))
    shown = json.dumps(served.card(ALICE).blocks)
    assert "Approved by alice" in shown and "tapgate_approve_all" in shown  # one still open
    await served.slack_tap(click("deny", second, BOB, served.card(BOB).channel))
    await until(lambda: len(served.slack.views) == 1)  # a single deny's own reason modal
    [one, two] = await statuses(served, [first, second])
    assert (one.status, two.status) == ("approved", "pending")
    assert two.batch_id == batch_id


async def test_approve_all_after_a_denial_leaves_it_denied_and_says_so(served: Served) -> None:
    batch_id, (first, second) = await four(served)
    await served.line_tap(f"v=1&a=deny&r={second}", BOB)
    told = await served.line_tap(f"v=1&a=approve_all&b={batch_id}", ALICE)
    assert told == f"Batch {batch_id[:8]}: 1 approved, 1 was already denied by bob."
    [one, two] = await statuses(served, [first, second])
    assert (one.status, one.resolved_by) == ("approved", "alice")
    assert (two.status, two.resolved_by) == ("denied", "bob")
    late = await served.line_tap(f"v=1&a=approve_all&b={batch_id}", BOB)
    assert late == (
        f"Batch {batch_id[:8]}: nothing decided; 1 was already approved by alice, "
        "1 was already denied by bob."
    )


async def test_a_non_approvers_approve_all_changes_nothing_and_is_audited(served: Served) -> None:
    batch_id, asks = await four(served)
    told = await served.line_tap(f"v=1&a=approve_all&b={batch_id}", CAROL)
    assert told == "You are not an approver for any open call of this batch."
    await served.slack_tap(click("approve_all", batch_id, CAROL, "C0SHARED"))
    assert served.ephemerals(CAROL) == [told]
    for request in await statuses(served, asks):
        assert request.status == "pending"
        refused = list(await served.gate.audit_log(request_id=request.id))
        refused = [e for e in refused if e.event == "refused"]
        assert [(e.actor, e.detail["why"], e.detail["batch"]) for e in refused] == [
            ("carol", "not an approver", batch_id)
        ] * 2


async def test_twenty_concurrent_approve_alls_resolve_each_call_once(served: Served) -> None:
    calls = [{"tool": "deploy", "arguments": {"n": n}} for n in range(20)]
    body = await served.submit(calls)
    batch_id, asks = body["id"], [c["id"] for c in body["calls"]]
    await served.cards_sent(2)
    assert await served.outbox_rows() == 4
    told = await asyncio.gather(
        *(
            served.line_tap(f"v=1&a=approve_all&b={batch_id}", ALICE if n % 2 else BOB)
            for n in range(20)
        )
    )
    winners = [t for t in told if "nothing decided" not in t]
    assert sum(int(t.split(": ")[1].split(" ")[0]) for t in winners) == 20
    for request in await statuses(served, asks):
        assert request.status == "approved"
        lines = await served.gate.audit_log(request_id=request.id)
        assert [e.event for e in lines].count("approved") == 1


async def test_allow_all_for_the_session_grants_each_calls_own_fingerprint(
    served: Served,
) -> None:
    batch_id, asks = await four(served)
    told = await served.line_tap(f"v=1&a=approve_all_session&b={batch_id}", ALICE)
    assert told == f"Batch {batch_id[:8]}: 2 approved for this session."
    grants = await served.gate.grants()
    assert sorted(g.request_id or "" for g in grants) == sorted(asks)
    assert len({g.fingerprint for g in grants}) == 2


async def test_the_card_keeps_its_promise_when_slack_is_slow(served: Served) -> None:
    """A decision between the claim and the send still gets its update (the version rule)."""
    started = time.perf_counter()
    _batch_id, (first, _) = await four(served)
    await served.line_tap(f"v=1&a=deny&r={first}", ALICE)
    card = served.card(BOB)
    await until(lambda: "Denied by alice" in json.dumps(served.card(BOB).blocks))
    assert any(u.ts == card.ts for u in served.slack.updates)
    assert time.perf_counter() - started < 10
