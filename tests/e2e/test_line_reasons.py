"""Reasons on LINE: "Deny…", then the approver's next text is the reason the agent reads.

End to end through the real server (``build_app``), the real LineNotifier
pushing to the fake LINE API, signed webhook bodies, a real SQLite file, and
the manual clock; the agent waits on the real HTTP long-poll.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from tapgate.channels.line.notifier import LineNotifier
from tapgate.channels.slack.notifier import SlackNotifier
from tapgate.config import parse_config
from tapgate.decisions.buttons import deny_reason_postback_data, postback_data
from tapgate.delivery.notifier import Notifier
from tapgate.errors import ConfigError
from tapgate.gate.clock import ManualClock
from tapgate.gate.models import CONTACT_TOOL, Request, ToolCall
from tapgate.server.app import HEARTBEAT, build_app
from tests.fakes import FakeLine, FakeSlack
from tests.fakes.served import LINE_SECRET, LINE_TOKEN, LineServed
from tests.fakes.slack import DEFAULT_BOT_TOKEN
from tests.fakes.taps import line_event

AGENT_TOKEN = "ci-agent-token-0123456789abcdef"
ALICE, BOB, CAROL = "U" + "a1" * 16, "U" + "b0" * 16, "U" + "c4" * 16
BOB_SLACK = "U0BOB"
WINDOW = 120

Client = TestClient[web.Request, web.Application]


def config(
    db_url: str,
    fake_url: str,
    *,
    on_timeout: str = "deny",
    timeout: int = 3600,
    slack_url: str | None = None,
) -> Any:
    slack = {"slack": {"bot_token": DEFAULT_BOT_TOKEN, "signing_secret": "s" * 20}}
    return parse_config(
        {
            "server": {"heartbeat_interval": 3600},  # beats are run by hand, on the manual clock
            "store": {"url": db_url},
            "agents": [{"name": "ci", "token": AGENT_TOKEN}],
            "approvers": [
                {"name": "alice", "line": ALICE},
                {"name": "bob", "line": BOB, "slack": BOB_SLACK},
                {"name": "carol", "line": CAROL},
            ],
            "channels": {
                "console": {"enabled": False},
                "line": {
                    "channel_access_token": LINE_TOKEN,
                    "channel_secret": LINE_SECRET,
                    "api_base_url": fake_url,
                    "timeout": 5,
                    "reason_window": f"{WINDOW}s",
                },
            }
            | (slack if slack_url else {}),
            "policy": {
                "rules": [
                    {"tool": t, "action": "ask", "approvers": ["alice", "bob"], "timeout": timeout}
                    for t in ("deploy", "migrate", CONTACT_TOOL)
                ]
                + [{"tool": "rotate", "action": "ask", "approvers": ["alice"], "timeout": 60}],
                "on_timeout": on_timeout,
            },
        },
        env={},
    )


class Served(LineServed):
    """The real app, the fake LINE API and the manual clock, as an approver's taps see them."""

    told = LineServed.replied_to  # what LINE was asked to reply to an event

    async def ask(self, tool: str = "deploy", **arguments: Any) -> Request:
        call = ToolCall(tool=tool, arguments=arguments or {"env": "prod"}, agent="ci")
        ticket = await self.gate.submit(call)
        assert ticket.request is not None
        return ticket.request

    async def status(self, request: Request) -> tuple[str, str | None, str | None]:
        current = await self.gate.get_request(request.id)
        return current.status, current.resolved_by, current.resolution_reason

    async def refusals(self, request: Request) -> list[tuple[str, str]]:
        audit = await self.gate.audit_log(request_id=request.id)
        return [(e.actor, e.detail["why"]) for e in audit if e.event == "refused"]

    async def beat(self) -> None:
        await self.app[HEARTBEAT].beat()


def deny_tap(request: Request, user: str = ALICE) -> dict[str, Any]:
    """Tapping "Deny…" on ``request``'s card."""
    return line_event("postback", user, postback={"data": deny_reason_postback_data(request.id)})


def button(action: str, request: Request, user: str = ALICE) -> dict[str, Any]:
    return line_event("postback", user, postback={"data": postback_data(action, request.id)})  # type: ignore[arg-type]


def text(words: str, user: str = ALICE) -> dict[str, Any]:
    message = {"id": str(uuid.uuid4().int % 10**18), "type": "text", "quoteToken": "q"}
    return line_event("message", user, message={**message, "text": words})


def asked(request: Request, tool: str = "deploy") -> str:
    return (
        f"Type the reason (or 'skip') to deny {tool} (request {request.id[:8]}) within 2 minutes;"
        " after that, or if you tap another button, it is denied without a reason."
    )


def denied(request: Request, reason: str = "", tool: str = "deploy") -> str:
    return f"Denied - {tool} (request {request.id[:8]})" + (f": {reason}" if reason else "")


async def serve(
    db_url: str,
    fake: FakeLine,
    clock: ManualClock,
    aiohttp_client: Callable[[web.Application], Awaitable[Client]],
    slack: FakeSlack | None = None,
    **options: Any,
) -> Served:
    notifiers: list[Notifier] = [LineNotifier(LINE_TOKEN, api_base_url=fake.url, timeout=5)]
    if slack is not None:
        notifiers.append(SlackNotifier(DEFAULT_BOT_TOKEN, api_base_url=slack.url, timeout=5))
        options["slack_url"] = slack.url
    app = build_app(config(db_url, fake.url, **options), clock=clock, notifiers=notifiers)
    return Served(app=app, client=await aiohttp_client(app), line=fake, clock=clock)


@pytest.fixture
def db_url(migrated_sqlite_url: str) -> str:
    return migrated_sqlite_url


@pytest.fixture
async def fake_line() -> AsyncIterator[FakeLine]:
    async with FakeLine(access_token=LINE_TOKEN) as fake:
        yield fake


@pytest.fixture
async def served(
    db_url: str,
    fake_line: FakeLine,
    clock: ManualClock,
    aiohttp_client: Callable[[web.Application], Awaitable[Client]],
) -> Served:
    return await serve(db_url, fake_line, clock, aiohttp_client)


async def test_the_card_offers_deny_with_a_reason(served: Served) -> None:
    request = await served.ask()

    async def pushed() -> dict[str, Any]:
        for _ in range(1000):
            mine = [m for m in served.line.pushed_to(ALICE) if request.id in json.dumps(m)]
            if mine:
                return mine[0]
            await asyncio.sleep(0.005)
        raise AssertionError("never pushed")

    footer = (await pushed())["contents"]["footer"]["contents"]
    labels = {b["action"]["label"]: b["action"]["data"] for b in footer}
    assert labels["Deny…"] == f"v=1&a=deny_reason&r={request.id}"
    assert "Deny" not in labels  # the immediate deny is gone from new cards


async def test_a_typed_reason_reaches_the_agents_long_poll(served: Served) -> None:
    headers = {"Authorization": f"Bearer {AGENT_TOKEN}"}
    call = {"tool": "deploy", "arguments": {"env": "prod"}}
    async with served.client.post("/v1/tool-calls", json=call, headers=headers) as response:
        request_id = (await response.json())["id"]
    request = await served.gate.get_request(request_id)
    poll = asyncio.create_task(
        served.client.get(f"/v1/tool-calls/{request_id}?wait=30", headers=headers)
    )

    tap = deny_tap(request)
    assert await served.post(tap) == 200
    assert served.told(tap) == [asked(request)]
    assert (await served.status(request))[0] == "pending"  # others may still decide
    assert not poll.done()

    reason = text("  Not during the freeze; ask again on Monday.  ")
    assert await served.post(reason) == 200
    async with await asyncio.wait_for(poll, 10) as answered:
        body = await answered.json()
    assert (body["decision"], body["status"], body["decided_by"]) == ("deny", "denied", "alice")
    assert body["reason"] == "Not during the freeze; ask again on Monday."
    assert served.told(reason) == [denied(request, "Not during the freeze; ask again on Monday.")]
    audit = await served.gate.audit_log(request_id=request.id)
    [line] = [e for e in audit if e.event == "denied"]
    assert (line.actor, line.detail["channel"], line.detail["user_id"]) == ("alice", "line", ALICE)


async def test_skip_denies_without_a_reason(served: Served) -> None:
    request = await served.ask()
    await served.post(deny_tap(request))
    skip = text("SKIP")
    assert await served.post(skip) == 200
    assert served.told(skip) == [denied(request)]
    decision = (await served.gate.get_request(request.id)).decision()
    assert decision is not None
    assert (decision.verdict, decision.decided_by, decision.reason) == (
        "deny",
        "alice",
        "denied by alice",
    )


async def test_the_window_ending_denies_without_a_reason(served: Served) -> None:
    request = await served.ask()
    await served.post(deny_tap(request))
    served.clock.advance(WINDOW - 1)
    await served.beat()
    assert (await served.status(request))[0] == "pending"
    served.clock.advance(2)
    await served.beat()
    assert await served.status(request) == ("denied", "alice", None)
    late = text("because I said so")
    assert await served.post(late) == 200
    assert served.told(late) == []  # nothing pending any more: ordinary chat
    assert await served.status(request) == ("denied", "alice", None)
    await served.beat()  # nothing left to end
    assert len(await served.gate.audit_log(request_id=request.id)) == 2


async def test_a_tap_elsewhere_denies_without_a_reason_then_acts(served: Served) -> None:
    first, second = await served.ask(), await served.ask("migrate")
    await served.post(deny_tap(first))
    approve = button("approve", second)
    assert await served.post(approve) == 200
    assert served.told(approve) == [
        f"{denied(first)}\nApproved - migrate (request {second.id[:8]})"
    ]
    assert await served.status(first) == ("denied", "alice", None)
    assert (await served.status(second))[0] == "approved"
    after = text("too late")
    assert await served.post(after) == 200 and served.told(after) == []


async def test_a_second_deny_denies_the_first_without_a_reason(served: Served) -> None:
    first, second = await served.ask(), await served.ask("migrate")
    await served.post(deny_tap(first))
    again = deny_tap(first)  # the same card twice: still the one pending reason
    assert await served.post(again) == 200 and served.told(again) == [asked(first)]
    other = deny_tap(second)
    assert await served.post(other) == 200
    assert served.told(other) == [f"{denied(first)}\n{asked(second, 'migrate')}"]
    reason = text("wrong database")
    await served.post(reason)
    assert await served.status(first) == ("denied", "alice", None)
    assert await served.status(second) == ("denied", "alice", "wrong database")


async def test_another_approver_deciding_first_is_told(served: Served) -> None:
    request = await served.ask()
    await served.post(deny_tap(request))
    bob = button("approve", request, BOB)
    assert await served.post(bob) == 200
    reason = text("no!")
    assert await served.post(reason) == 200
    [told] = served.told(reason)
    assert told.startswith("Already approved by bob at ") and told.endswith(" - deploy.")
    assert await served.status(request) == ("approved", "bob", None)
    refused = [
        e for e in await served.gate.audit_log(request_id=request.id) if e.event == "refused"
    ]
    assert [(e.actor, e.detail["why"]) for e in refused] == [("alice", "already approved by bob")]


async def test_a_non_approver_cannot_open_a_reason(served: Served) -> None:
    request = await served.ask()
    tap = deny_tap(request, CAROL)
    again = {**tap, "deliveryContext": {"isRedelivery": True}}
    assert await served.post(tap, again) == 200
    assert served.told(tap) == ["You are not an approver for this request."]
    chat = text("deny it", CAROL)
    assert await served.post(chat) == 200 and served.told(chat) == []
    assert (await served.status(request))[0] == "pending"
    refused = [
        e for e in await served.gate.audit_log(request_id=request.id) if e.event == "refused"
    ]
    assert len(refused) == 1


async def test_a_restart_between_the_tap_and_the_text_still_completes(
    db_url: str,
    fake_line: FakeLine,
    clock: ManualClock,
    aiohttp_client: Callable[[web.Application], Awaitable[Client]],
) -> None:
    before = await serve(db_url, fake_line, clock, aiohttp_client)
    request = await before.ask()
    await before.post(deny_tap(request))
    await before.client.close()  # the process is gone; the pending reason is a row

    after = await serve(db_url, fake_line, clock, aiohttp_client)
    reason = text("rolled back already")
    assert await after.post(reason) == 200
    assert after.told(reason) == [denied(request, "rolled back already")]
    assert await after.status(request) == ("denied", "alice", "rolled back already")


async def test_a_redelivered_text_is_taken_once(served: Served) -> None:
    first, second = await served.ask(), await served.ask("migrate")
    await served.post(deny_tap(first))
    reason = text("first reason")
    redelivered = {**reason, "deliveryContext": {"isRedelivery": True}}
    assert await served.post(reason) == 200
    audit = await served.gate.audit_log(request_id=first.id)
    await served.post(deny_tap(second))  # a new pending reason must not take the old text
    assert await served.post(redelivered) == 200
    assert await served.post(reason) == 200
    assert served.told(reason) == [denied(first, "first reason")]  # once
    assert await served.gate.audit_log(request_id=first.id) == audit
    assert (await served.status(second))[0] == "pending"


async def test_an_oversized_reason_keeps_the_window_open(served: Served) -> None:
    request = await served.ask()
    await served.post(deny_tap(request))
    huge = text("x" * 2001)
    assert await served.post(huge) == 200
    assert served.told(huge) == [
        "That is longer than 2000 characters; please shorten it and send it again."
    ]
    fine = text("x" * 2000)
    await served.post(fine)
    status = await served.status(request)
    assert status[0] == "denied" and status[2] == "x" * 2000
    [told] = served.told(fine)
    assert len(told) < 300  # the reply clips what it repeats; the agent gets all of it


async def test_a_reason_is_masked_and_flattened_in_the_reply_only(served: Served) -> None:
    request = await served.ask()
    await served.post(deny_tap(request))
    secret = "ghp" + "_" + "R2l0SHViVG9rZW5Gb3JUZXN0czAxMjM0NTY3"
    reason = text(f"leaked\n{secret}\u202e <b>x</b>")
    await served.post(reason)
    [told] = served.told(reason)
    assert secret not in told and "\n" not in told and "\u202e" not in told
    assert "<b>x</b>" in told  # LINE shows plain text: nothing is interpreted
    assert (await served.status(request))[2] == f"leaked\n{secret}\u202e <b>x</b>"


async def test_the_request_expiring_first_is_a_deny_even_with_on_timeout_allow(
    db_url: str,
    fake_line: FakeLine,
    clock: ManualClock,
    aiohttp_client: Callable[[web.Application], Awaitable[Client]],
) -> None:
    served = await serve(db_url, fake_line, clock, aiohttp_client, on_timeout="allow")
    rotate, untouched = await served.ask("rotate"), await served.ask("rotate", key="other")
    tap = deny_tap(rotate)
    await served.post(tap)
    [told] = served.told(tap)  # the window is cut to what is left of the request's life
    assert "to deny rotate" in told and "within 1 minute;" in told
    served.clock.advance(61)  # the request's 60 s end before the 120 s window
    await served.beat()
    decision = (await served.gate.get_request(rotate.id)).decision()
    assert decision is not None and (decision.status, decision.verdict) == ("expired", "deny")
    other = (await served.gate.get_request(untouched.id)).decision()
    assert other is not None and other.verdict == "allow"  # no Deny… tapped: on_timeout
    late = text("why")
    assert await served.post(late) == 200 and served.told(late) == []


async def test_a_question_reply_takes_the_next_text_as_the_answer(served: Served) -> None:
    ticket = await served.gate.submit(
        ToolCall(tool=CONTACT_TOOL, arguments={"message": "EU or US?"}, agent="ci"),
        question=True,
    )
    question = ticket.request
    assert question is not None
    reply = button("reply", question, BOB)
    assert await served.post(reply) == 200
    assert served.told(reply) == [
        f'Type your answer after "answer {question.id[:8]}:" and send it.'
    ]
    answer = text("EU, after 18:00", BOB)  # the prefill deleted: the window still knows
    assert await served.post(answer) == 200
    assert served.told(answer) == [f"Answer sent - question (request {question.id[:8]})"]
    assert await served.status(question) == ("approved", "bob", "EU, after 18:00")


async def test_a_reply_with_no_answer_lapses_and_decides_nothing(served: Served) -> None:
    ticket = await served.gate.submit(
        ToolCall(tool=CONTACT_TOOL, arguments={"message": "EU or US?"}, agent="ci"),
        question=True,
    )
    question = ticket.request
    assert question is not None
    await served.post(button("reply", question))
    served.clock.advance(WINDOW + 1)
    await served.beat()
    assert (await served.status(question))[0] == "pending"
    chat = text("hello")
    assert await served.post(chat) == 200 and served.told(chat) == []
    assert (await served.status(question))[0] == "pending"


async def test_a_typed_answer_elsewhere_ends_a_pending_deny(served: Served) -> None:
    deploy = await served.ask()
    ticket = await served.gate.submit(
        ToolCall(tool=CONTACT_TOOL, arguments={"message": "EU or US?"}, agent="ci"),
        question=True,
    )
    assert ticket.request is not None
    await served.post(deny_tap(deploy))
    answer = text(f"answer {ticket.request.id[:8]}: EU")
    await served.post(answer)
    assert served.told(answer) == [
        f"{denied(deploy)}\nAnswer sent - question (request {ticket.request.id[:8]})"
    ]
    assert await served.status(deploy) == ("denied", "alice", None)


@pytest.mark.parametrize("window", ["5s", "2h", "soon", 0, -1])
def test_a_bad_reason_window_is_a_config_error(window: object) -> None:
    line = {"channel_access_token": "t", "channel_secret": "s", "reason_window": window}
    with pytest.raises(ConfigError, match=r"channels\.line\.reason_window"):
        parse_config({"channels": {"line": line}}, env={})


async def test_the_reason_shows_on_the_requests_other_cards(
    db_url: str,
    fake_line: FakeLine,
    clock: ManualClock,
    aiohttp_client: Callable[[web.Application], Awaitable[Client]],
) -> None:
    """LINE cannot edit its card, so the reply says it; Slack's card of the request is rewritten."""
    async with FakeSlack() as slack:
        served = await serve(db_url, fake_line, clock, aiohttp_client, slack=slack)
        request = await served.ask()
        for _ in range(1000):  # bob's Slack card is out before alice denies
            if slack.posts:
                break
            await asyncio.sleep(0.005)
        await served.post(deny_tap(request))
        await served.post(text("not during the freeze <!channel>"))
        for _ in range(1000):
            if slack.updates:
                break
            await asyncio.sleep(0.005)
        [update] = slack.updates
        shown = json.dumps(update.blocks)
        assert "Denied by alice" in shown
        assert "Reason: not during the freeze &lt;!channel&gt;" in shown  # escaped: inert
        await served.client.close()


async def test_the_id_command_is_never_taken_as_a_reason(served: Served) -> None:
    request = await served.ask()
    await served.post(deny_tap(request))
    command = text("id")
    assert await served.post(command) == 200
    assert served.told(command) == [
        f"Your LINE user id is {ALICE}; add it to tapgate.yaml under approvers."
    ]
    assert (await served.status(request))[0] == "pending"
    await served.post(text("ok, now the reason"))
    assert await served.status(request) == ("denied", "alice", "ok, now the reason")
