"""The LINE webhook through the real app: signed taps decide, everything else changes nothing.

Every request is signed for real (the HMAC is computed here, independently of
the code under test), posted to ``build_app``'s ``/webhooks/line`` through
aiohttp's test client, and answered by replies that the real line-bot-sdk
client sends to the fake LINE API.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import event as observe
from hypothesis import strategies as st
from sqlalchemy import text

from tapgate.channels.line.events import EventReader, Malformed
from tapgate.channels.line.signature import line_signature
from tapgate.channels.line.webhook import LineWebhook, verify_signature
from tapgate.config import Config, parse_config
from tapgate.delivery.recording import RecordingNotifier
from tapgate.gate.clock import ManualClock
from tapgate.gate.models import Request, ToolCall
from tapgate.server.app import build_app
from tapgate.server.keys import METRICS
from tests.fakes import FakeLine, Fault, taps
from tests.fakes.receivers import line_webhook
from tests.fakes.served import LINE_SECRET, LINE_TOKEN, ServedApp, channels
from tests.fakes.taps import line_body, line_headers
from tests.strategies import HEADER_VALUES, JSON

SECRET = LINE_SECRET
TOKEN = LINE_TOKEN
BOT = "U0123456789abcdef0123456789abcdef"
ALICE = "U" + "a1" * 16
BOB = "U" + "b2" * 16
CAROL = "U" + "c3" * 16  # an approver, but not of deploy requests
STRANGER = "U" + "d4" * 16  # nobody tapgate knows

# line/line-bot-sdk-python tests/v3/test_webhook.py, TestSignatureValidator.test_validate
SDK_VECTOR = (
    b"channel_secret",
    b"bodybodybodybody",
    "/gg9a+LvFevTH1sd7XCQycD7tsWclCsInj7MhBHxN7k=",
)
# A realistic approval postback, signed with "test_channel_secret": the exact signed bytes.
APPROVAL_VECTOR = (
    b"test_channel_secret",
    b'{"destination":"U0123456789abcdef0123456789abcdef","events":[{"type":"postback",'
    b'"mode":"active","timestamp":1763700000000,"source":{"type":"user",'
    b'"userId":"U206d25c2ea6bd87c17655609a1c37cb8"},'
    b'"replyToken":"b60d432864f44d079f6d8efe86cf404b",'
    b'"webhookEventId":"01JDAW3Q9RZ8X6V5T4S3R2Q1P0","deliveryContext":{"isRedelivery":false},'
    b'"postback":{"data":"v=1&a=approve&r=01JDAW4B7KM2N3P4Q5R6S7T8V9"}}]}',
    "AV/GslErHQgpxUBHgID1Yaa59iUUghQh8WEkcDM/T/A=",
)


Client = TestClient[web.Request, web.Application]


def sign(body: bytes, secret: str = SECRET) -> str:
    return line_headers(secret, body)["X-Line-Signature"]


def line_event(kind: str, *, user: str | None = ALICE, **kw: Any) -> dict[str, Any]:
    """One webhook event shaped like LINE's, from alice unless ``user`` says otherwise."""
    return taps.line_event(kind, user, **kw)


def postback(data: str, **kw: Any) -> dict[str, Any]:
    return line_event("postback", postback={"data": data}, **kw)


def tap_event(action: str, request: Request, **kw: Any) -> dict[str, Any]:
    return postback(f"v=1&a={action}&r={request.id}", **kw)


def text_message(words: str, **kw: Any) -> dict[str, Any]:
    message = {"id": "468789577898262530", "type": "text", "quoteToken": "q1", "text": words}
    return line_event("message", message=message, **kw)


def payload(*events: dict[str, Any]) -> bytes:
    return line_body(*events, destination=BOT)


def config(line_url: str, db_url: str, tap_log: str = "info") -> Config:
    return parse_config(
        {
            "store": {"url": db_url},
            "approvers": [
                {"name": "alice", "line": ALICE, "groups": ["oncall"]},
                {"name": "bob", "line": BOB, "groups": ["oncall"]},
                {"name": "carol", "line": CAROL},
            ],
            "channels": channels(line_url=line_url) | {"tap_log": tap_log},
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
    """The real app, its test client, the fake LINE API and the manual clock."""

    line: FakeLine

    async def ask(self, tool: str = "deploy", **arguments: Any) -> Request:
        ticket = await self.gate.submit(
            ToolCall(tool=tool, arguments=arguments or {"env": "prod"}, agent="ci")
        )
        assert ticket.request is not None
        return ticket.request

    async def post(self, body: bytes, headers: dict[str, str] | None = None) -> tuple[int, Any]:
        if headers is None:
            headers = line_headers(SECRET, body)
        async with self.client.post("/webhooks/line", data=body, headers=headers) as response:
            status, answer = response.status, await response.json(content_type=None)
        await line_webhook(self.app).settled()  # replies go out after the 200
        return status, answer

    def replies(self) -> list[str]:
        return [m["text"] for reply in self.line.replies for m in reply.messages]

    def replied_to(self, item: dict[str, Any]) -> list[str]:
        token = item["replyToken"]
        return [m["text"] for r in self.line.replies if r.reply_token == token for m in r.messages]

    def metric(self, name: str, **labels: str) -> float:
        return self.app[METRICS].registry.get_sample_value(name, labels) or 0.0


@pytest.fixture
async def served(
    migrated_db_url: str,  # first: the database must outlive the app's shutdown
    clock: ManualClock,
    aiohttp_client: Callable[[web.Application], Awaitable[Client]],
) -> AsyncIterator[Served]:
    async with FakeLine(access_token=TOKEN) as line:
        app = build_app(
            config(line.url, migrated_db_url), clock=clock, notifiers=[RecordingNotifier("line")]
        )
        client = await aiohttp_client(app)
        yield Served(app=app, client=client, line=line, clock=clock)
        await client.close()  # the app stops (its dispatcher too) before the fakes do


def short(request: Request) -> str:
    return f"request {request.id[:8]}"


async def assert_untouched(served: Served, request: Request) -> None:
    current = await served.gate.get_request(request.id)
    assert current.status == "pending"
    assert current.resolved_by is None and current.resolved_at is None


# -- the signature, as a pure function -------------------------------------------------


@pytest.mark.parametrize("vector", [SDK_VECTOR, APPROVAL_VECTOR], ids=["sdk", "approval"])
def test_signature_matches_the_published_vectors(vector: tuple[bytes, bytes, str]) -> None:
    secret, body, signature = vector
    assert line_signature(secret, body) == signature
    assert verify_signature(secret, body, signature)


@pytest.mark.parametrize(
    ("secret", "body", "signature"),
    [
        (b"channel_secret", b"bodybodybodybody ", SDK_VECTOR[2]),  # one byte more
        (b"channel_secreT", b"bodybodybodybody", SDK_VECTOR[2]),  # another secret
        (b"channel_secret", b"bodybodybodybody", SDK_VECTOR[2][:-2] + "=="),
        (b"channel_secret", b"bodybodybodybody", SDK_VECTOR[2] + " "),
        (b"channel_secret", b"bodybodybodybody", ""),
        (b"channel_secret", b"bodybodybodybody", None),
        (b"channel_secret", b"bodybodybodybody", "/gg9a+LvFevTH1sd7XCQycD7tsWclCsInj7MhBHxN7é"),
        (b"", b"bodybodybodybody", line_signature(b"", b"bodybodybodybody")),  # no secret
    ],
)
def test_signature_refuses_everything_else(
    secret: bytes, body: bytes, signature: str | None
) -> None:
    assert not verify_signature(secret, body, signature)


# -- taps that decide ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("action", "user", "status", "by", "reply"),
    [
        ("approve", ALICE, "approved", "alice", "Approved - deploy"),
        ("deny", BOB, "denied", "bob", "Denied - deploy"),
        ("approve_session", ALICE, "approved", "alice", "Approved for this session - deploy"),
    ],
)
async def test_a_signed_tap_decides_wakes_the_agent_and_replies(
    served: Served, action: str, user: str, status: str, by: str, reply: str
) -> None:
    request = await served.ask()
    waiter = asyncio.create_task(served.gate.wait(request.id))
    item = tap_event(action, request, user=user)
    assert await served.post(payload(item)) == (200, {"ok": True})
    decision = await asyncio.wait_for(waiter, 5)
    assert decision is not None
    assert (decision.status, decision.decided_by) == (status, by)
    assert served.replied_to(item) == [f"{reply} ({short(request)})"]
    audit = await served.gate.store.audit_log(request_id=request.id)
    [decided] = [e for e in audit if e.event == status]
    assert decided.actor == by
    assert (decided.detail["channel"], decided.detail["user_id"]) == ("line", user)
    assert served.metric("tapgate_tap_to_decision_seconds_count") == 1


async def test_the_core_takes_plain_headers_in_any_case(served: Served) -> None:
    request = await served.ask()
    webhook = line_webhook(served.app)
    body = payload(tap_event("approve", request))
    result = await webhook.handle({"x-line-signature": sign(body)}, body)
    assert (result.status, result.body) == (200, {"ok": True})
    await webhook.settled()  # stored before the 200, decided after it
    assert (await served.gate.get_request(request.id)).resolved_by == "alice"


# -- refused, and nothing changes -----------------------------------------------------


def _missing(body: bytes) -> tuple[bytes, dict[str, str]]:
    return body, {"Content-Type": "application/json"}


def _wrong_secret(body: bytes) -> tuple[bytes, dict[str, str]]:
    return body, {"X-Line-Signature": sign(body, "another-channel-secret")}


def _modified_after_signing(body: bytes) -> tuple[bytes, dict[str, str]]:
    return body.replace(b"v=1&a=approve", b"v=1&a=deny"), {"X-Line-Signature": sign(body)}


def _garbage(body: bytes) -> tuple[bytes, dict[str, str]]:
    return body, {"X-Line-Signature": "not a signature"}


@pytest.mark.parametrize("tamper", [_missing, _wrong_secret, _modified_after_signing, _garbage])
async def test_a_bad_signature_is_401_and_changes_nothing(
    served: Served,
    tamper: Callable[[bytes], tuple[bytes, dict[str, str]]],
    caplog: pytest.LogCaptureFixture,
) -> None:
    request = await served.ask()
    before = await served.gate.store.audit_log(request_id=request.id)
    body, headers = tamper(payload(tap_event("approve", request)))
    assert await served.post(body, headers) == (401, {"error": "invalid signature"})
    await assert_untouched(served, request)
    assert await served.gate.store.audit_log(request_id=request.id) == before
    assert served.line.requests == []  # not even a reply
    assert served.metric("tapgate_webhook_rejections_total", platform="line", reason="signature")
    assert request.id not in caplog.text  # the fact is logged, never the body


async def test_a_compressed_body_is_415(served: Served) -> None:
    """A body claiming gzip: refused before any check (the server decodes no coding)."""
    request = await served.ask()
    body = payload(tap_event("approve", request))
    headers = {"Content-Encoding": "gzip", "X-Line-Signature": sign(body)}
    expected = {"error": "send the body without a Content-Encoding"}
    assert await served.post(body, headers) == (415, expected)
    await assert_untouched(served, request)
    assert served.metric("tapgate_webhook_rejections_total", platform="line", reason="payload")


@pytest.mark.parametrize(
    ("setting", "level"),
    [("info", logging.INFO), ("debug", logging.DEBUG), ("warning", logging.WARNING), ("off", None)],
)
async def test_a_decided_tap_logs_one_line_at_the_configured_level(
    db_url: str,
    clock: ManualClock,
    aiohttp_client: Callable[[web.Application], Awaitable[Client]],
    caplog: pytest.LogCaptureFixture,
    setting: str,
    level: int | None,
) -> None:
    """``channels.tap_log``: one line per decided tap, at that level; a redelivery logs no tap."""
    caplog.set_level(logging.DEBUG, logger="tapgate.channels.line.webhook")
    async with FakeLine(access_token=TOKEN) as line:
        app = build_app(config(line.url, db_url, tap_log=setting), clock=clock)
        served = Served(app=app, client=await aiohttp_client(app), line=line, clock=clock)
        request = await served.ask()
        item = tap_event("approve", request)
        assert (await served.post(payload(item)))[0] == 200
        assert (await served.post(payload(item)))[0] == 200
        assert len(served.replied_to(item)) == 1
    taps = [(r.levelno, r.getMessage()) for r in caplog.records if " tap " in r.getMessage()]
    said = f"LINE tap approve by alice on request {request.id}: applied"
    assert taps == ([] if level is None else [(level, said)])


async def test_a_redelivered_tap_is_applied_once_and_answered_once(served: Served) -> None:
    request = await served.ask()
    first = tap_event("approve", request)
    again = {**first, "deliveryContext": {"isRedelivery": True}}
    assert (await served.post(payload(first)))[0] == 200
    before = await served.gate.store.audit_log(request_id=request.id)
    assert (await served.post(payload(again)))[0] == 200
    assert (await served.post(payload(first)))[0] == 200  # a replay of the very same bytes
    assert served.replies() == [f"Approved - deploy ({short(request)})"]
    assert await served.gate.store.audit_log(request_id=request.id) == before
    assert (await served.gate.get_request(request.id)).resolved_by == "alice"


async def test_a_redelivery_of_an_event_never_handled_is_handled(served: Served) -> None:
    request = await served.ask()
    item = tap_event("deny", request, user=BOB, redelivery=True)
    assert (await served.post(payload(item)))[0] == 200
    assert (await served.gate.get_request(request.id)).status == "denied"


@pytest.mark.parametrize(("user", "actor"), [(STRANGER, f"line:{STRANGER}"), (CAROL, "carol")])
async def test_a_tap_by_someone_not_approving_this_request_is_refused_and_audited(
    served: Served, user: str, actor: str
) -> None:
    request = await served.ask()
    item = tap_event("approve", request, user=user)
    assert (await served.post(payload(item)))[0] == 200
    assert served.replied_to(item) == ["You are not an approver for this request."]
    await assert_untouched(served, request)
    refused = [
        e for e in await served.gate.store.audit_log(request_id=request.id) if e.event == "refused"
    ]
    assert [(e.actor, e.detail["why"]) for e in refused] == [(actor, "not an approver")]
    assert served.metric("tapgate_tap_to_decision_seconds_count") == 0


async def test_an_approver_decides_only_the_requests_that_name_them(served: Served) -> None:
    deploy, billing = await served.ask("deploy"), await served.ask("billing")
    items = [tap_event("approve", deploy, user=CAROL), tap_event("approve", billing, user=CAROL)]
    assert (await served.post(payload(*items)))[0] == 200
    assert [served.replied_to(item) for item in items] == [
        ["You are not an approver for this request."],
        [f"Approved - billing ({short(billing)})"],
    ]
    await assert_untouched(served, deploy)
    assert (await served.gate.get_request(billing.id)).resolved_by == "carol"


async def test_a_tap_after_expiry_is_refused(served: Served) -> None:
    request = await served.ask()
    served.clock.advance(61)  # the heartbeat may or may not have expired it yet
    item = tap_event("approve", request)
    assert (await served.post(payload(item)))[0] == 200
    assert served.replied_to(item) == [f"This request expired - deploy ({short(request)})."]
    current = await served.gate.get_request(request.id)
    decision = current.decision()
    assert decision is not None
    assert (decision.status, decision.source, decision.verdict) == ("expired", "timeout", "deny")


@pytest.mark.parametrize(
    "data",
    [
        "action=buyItem&itemId=123123&color=red",  # somebody else's button
        "v=0&a=approve&r={id}",  # an older format
        "v=2&a=approve&r={id}",  # a newer one
        "v=1&a=approve&r={id}&a=deny",
        "v=1&a=launch&r={id}",
        "v=1&a=approve&r=",
        "",
    ],
)
async def test_unknown_button_data_is_refused(served: Served, data: str) -> None:
    request = await served.ask()
    item = postback(data.format(id=request.id))
    assert (await served.post(payload(item)))[0] == 200
    assert served.replied_to(item) == ["This button is no longer valid."]
    await assert_untouched(served, request)


async def test_a_tap_on_an_unknown_request_is_answered(served: Served) -> None:
    item = postback("v=1&a=approve&r=nosuchrequest")
    assert (await served.post(payload(item)))[0] == 200
    assert served.replied_to(item) == ["This request does not exist (any more)."]


@pytest.mark.parametrize(("source", "user"), [("group", None), ("room", None), ("group", ALICE)])
async def test_taps_outside_a_one_to_one_chat_are_refused(
    served: Served, source: str, user: str | None
) -> None:
    request = await served.ask()
    item = tap_event("approve", request, source=source, user=user)
    assert (await served.post(payload(item)))[0] == 200
    [answer] = served.replied_to(item)
    assert "1:1 chat only" in answer
    await assert_untouched(served, request)


# -- many taps at once -----------------------------------------------------------------


async def test_fifty_concurrent_taps_make_exactly_one_decision(served: Served) -> None:
    request = await served.ask()
    waiter = asyncio.create_task(served.gate.wait(request.id))
    taps = [
        tap_event("approve", request, user=ALICE)
        if n % 2 == 0
        else tap_event("deny", request, user=BOB)
        for n in range(50)
    ]
    answers = await asyncio.gather(*(served.post(payload(item)) for item in taps))
    assert {status for status, _ in answers} == {200}
    decision = await asyncio.wait_for(waiter, 5)
    assert decision is not None
    final = await served.gate.get_request(request.id)
    verb = "Approved" if final.status == "approved" else "Denied"
    assert decision.decided_by == final.resolved_by == ("alice" if verb == "Approved" else "bob")
    replies = [text for item in taps for text in served.replied_to(item)]
    assert len(replies) == 50
    assert replies.count(f"{verb} - deploy ({short(request)})") == 1
    already = f"Already {final.status} by {final.resolved_by} at "
    assert sum(r.startswith(already) for r in replies) == 49
    audit = await served.gate.store.audit_log(request_id=request.id)
    assert [e.event for e in audit if e.event in ("approved", "denied")] == [final.status]
    assert sum(e.event == "refused" for e in audit) == 49
    assert served.metric("tapgate_tap_to_decision_seconds_count") == 1


# -- collecting approver ids, and the console's Verify button ---------------------------


FOLLOW = line_event("follow", follow={"isUnblocked": False})


@pytest.mark.parametrize("item", [text_message(" ID\n"), text_message("id"), FOLLOW])
async def test_id_and_follow_reply_with_the_user_id(served: Served, item: dict[str, Any]) -> None:
    newcomer = "U" + "f6" * 16
    item = {**item, "source": {"type": "user", "userId": newcomer}}
    assert (await served.post(payload(item)))[0] == 200
    assert served.replied_to(item) == [
        f"Your LINE user id is {newcomer}; add it to tapgate.yaml under approvers."
    ]


async def test_other_messages_and_events_are_ignored(served: Served) -> None:
    items = [
        text_message("hello"),
        text_message("id", source="group"),  # answered: approvals are 1:1 only
        line_event("message", message=STICKER),
        line_event("message", message={"id": "1", "type": "hologram", "quoteToken": "q"}),
        line_event("message", message={"type": "sticker"}),  # unreadable, but not a text
        line_event("unfollow"),
        line_event("somethingNew"),
    ]
    assert (await served.post(payload(*items)))[0] == 200
    assert [len(served.replied_to(item)) for item in items] == [0, 1, 0, 0, 0, 0, 0]


STICKER = {
    "id": "1",
    "type": "sticker",
    "quoteToken": "q",
    "packageId": "11537",
    "stickerId": "52002734",
    "stickerResourceType": "STATIC",
}


async def test_events_line_bot_sdk_cannot_read_do_not_sink_a_tap(served: Served) -> None:
    """Unreadable events tapgate would not act on are skipped; the tap beside them is decided."""
    request = await served.ask()
    unreadable = [
        line_event("message", message={"id": "1", "type": "hologram", "quoteToken": "q"}),
        line_event("message", message={"id": "1", "type": "text", "text": "hello"}),
        {**FOLLOW, "mode": "standby", "replyToken": None},  # standby: no reply token
    ]
    item = tap_event("approve", request)
    assert (await served.post(payload(*unreadable, item)))[0] == 200
    assert (await served.gate.get_request(request.id)).resolved_by == "alice"


async def test_an_empty_event_list_is_ok(served: Served) -> None:
    assert await served.post(payload()) == (200, {"ok": True})
    assert served.line.requests == []


@pytest.mark.parametrize(
    "body",
    [
        b"{not json",
        b"\xff\xfe{}",
        b"",
        b"[]",
        b"null",
        b'{"destination": "U1"}',
        b'{"events": {}}',
        b'{"events": [1]}',
        b'{"events": [{"type": "postback"}]}',
        b'{"events": [{"type": 5, "webhookEventId": "E1"}]}',
        b'{"events": [{"type": "postback", "webhookEventId": "E1", "postback": {"data": 5}}]}',
        b'{"events": [{"type": "postback", "webhookEventId": "E1", "source": "user",'
        b' "postback": {"data": ""}}]}',
        b'{"events": [{"type": "follow", "webhookEventId": "E1",'
        b' "deliveryContext": {"isRedelivery": "no"}}]}',
        b'{"events": [{"type": "message", "webhookEventId": "E1",'
        b' "message": {"type": "text", "text": null}}]}',
        b"[" * 100_000,
        # Complete envelopes with one field LINE never sends: line-bot-sdk refuses them.
        *(
            json.dumps({"destination": BOT, "events": [event]}).encode()
            for event in (
                {**postback("v=1&a=approve&r=x"), "postback": {"data": 5}},
                {**postback("v=1&a=approve&r=x"), "timestamp": "noon"},
                {**postback("v=1&a=approve&r=x"), "webhookEventId": ""},
                {**postback("v=1&a=approve&r=x"), "replyToken": ""},
                {**text_message("id"), "message": {"type": "text", "id": "1", "text": "id"}},
                {**text_message("answer 3fA9xK2b: yes"), "timestamp": None},
                {**text_message("id"), "source": {"type": "user", "userId": ""}},
            )
        ),
        # JSON escapes spelling a lone surrogate, which no store can encode (was a 503).
        *(
            json.dumps({"destination": BOT, "events": [text_message(text)]}).encode()
            for text in ("answer 3fA9xK2b: no \ud800", "deny 3fA9xK2b \udfff", "\ud800")
        ),
    ],
)
async def test_a_signed_but_malformed_body_is_400_and_changes_nothing(
    served: Served, body: bytes
) -> None:
    request = await served.ask()
    assert await served.post(body) == (400, {"error": "malformed payload"})
    await assert_untouched(served, request)
    assert served.line.requests == []
    assert served.metric("tapgate_webhook_rejections_total", platform="line", reason="payload")


# -- failures that must not reach LINE as a 5xx -----------------------------------------


@pytest.mark.parametrize("fault", [Fault.status(500), Fault.drop(), "expired token"])
async def test_a_failed_reply_still_answers_200_and_keeps_the_decision(
    served: Served, fault: Fault | str, caplog: pytest.LogCaptureFixture
) -> None:
    request = await served.ask()
    item = tap_event("approve", request)
    if isinstance(fault, Fault):
        served.line.script("reply", fault)
    else:
        served.line.expire_reply_token(item["replyToken"])
    with caplog.at_level(logging.WARNING, logger="tapgate.channels.line.webhook"):
        assert await served.post(payload(item)) == (200, {"ok": True})
    assert (await served.gate.get_request(request.id)).resolved_by == "alice"
    assert "LINE reply failed" in caplog.text
    assert served.line.replies == []


async def test_one_failing_event_does_not_fail_the_others(
    served: Served, caplog: pytest.LogCaptureFixture
) -> None:
    broken, fine = await served.ask(env="broken"), await served.ask(env="fine")
    # A row the store can no longer read: the tap on it raises inside the core.
    await served.gate.store.run(
        lambda conn: conn.execute(
            text("UPDATE requests SET arguments = 'not json' WHERE id = :id"), {"id": broken.id}
        )
    )
    first, second = tap_event("approve", broken), tap_event("approve", fine)
    assert await served.post(payload(first, second)) == (200, {"ok": True})
    assert served.replied_to(first) == [
        "tapgate could not record that just now; please tap the button again."
    ]
    assert served.replied_to(second) == [f"Approved - deploy ({short(fine)})"]
    assert "could not be handled" in caplog.text


async def test_an_empty_channel_secret_is_refused(served: Served) -> None:
    with pytest.raises(ValueError, match="channel secret"):
        LineWebhook(gate=served.gate, channel_secret="", access_token=TOKEN)


# -- anything at all: never a 5xx, never a change -----------------------------------------
#
# One app serves every example of a test: building the app (and migrating its
# database) per example would be far slower, and sharing it makes the claim
# stronger, since the request must survive all examples in a row. pytest-asyncio
# runs each example of an async @given test in the fixture's event loop, so the
# function-scoped fixture is reused on purpose.

HEADER_NAMES = st.sampled_from(
    ["X-Line-Signature", "x-line-signature", "Content-Type", "Authorization", "X-Other"]
)


SHARED = settings(
    max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@pytest.fixture
async def pending(served: Served) -> tuple[Served, Request]:
    return served, await served.ask()


@SHARED
@given(body=st.binary(max_size=512), headers=st.dictionaries(HEADER_NAMES, HEADER_VALUES))
async def test_arbitrary_unsigned_input_is_always_4xx(
    pending: tuple[Served, Request], body: bytes, headers: dict[str, str]
) -> None:
    served, request = pending
    status, _ = await served.post(body, headers)
    assert 400 <= status < 500
    await assert_untouched(served, request)


def _events(request: Request | str) -> st.SearchStrategy[Any]:
    """Events from people who may not decide ``request``: well formed, or with one field broken.

    Well-formed events reach the tap path (and the store); a broken field
    anywhere must be a 400, decided before anything is acted on.
    """
    data = st.sampled_from(["approve", "deny", "approve_session", "x"]).map(
        lambda a: f"v=1&a={a}&r={request if isinstance(request, str) else request.id}"
    )
    source = st.fixed_dictionaries(
        {
            "type": st.sampled_from(["user", "group", "room"]),
            "userId": st.sampled_from([STRANGER, CAROL]) | st.text(min_size=1, max_size=12),
        }
    )
    message = st.fixed_dictionaries(
        {"type": st.just("text"), "id": st.just("1"), "quoteToken": st.just("q"), "text": st.text()}
    )
    valid = st.fixed_dictionaries(
        {
            "type": st.sampled_from(["postback", "message", "follow", "unfollow"]),
            "mode": st.just("active"),
            "timestamp": st.just(1763700000000),
            "webhookEventId": st.text(min_size=1, max_size=26),
            "replyToken": st.uuids().map(str),
            "source": source,
            "postback": st.fixed_dictionaries({"data": data | st.text(max_size=40)}),
            "message": message,
            "follow": st.fixed_dictionaries({"isUnblocked": st.booleans()}),
            "deliveryContext": st.fixed_dictionaries({"isRedelivery": st.booleans()}),
        }
    )
    broken = st.tuples(valid, st.sampled_from(EVENT_KEYS), JSON).map(lambda t: {**t[0], t[1]: t[2]})
    return valid | broken


EVENT_KEYS = [
    "type",
    "mode",
    "timestamp",
    "webhookEventId",
    "replyToken",
    "source",
    "postback",
    "message",
    "follow",
    "deliveryContext",
]


def payloads(events: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({"destination": st.just(BOT), "events": events})


@SHARED
@given(draw=st.data())
async def test_arbitrary_signed_input_is_never_5xx_and_decides_nothing(
    pending: tuple[Served, Request], draw: st.DataObject
) -> None:
    served, request = pending
    shape = draw.draw(st.sampled_from(["payload", "payload", "payload", "json", "bytes"]))
    if shape == "bytes":
        body = draw.draw(st.binary(max_size=256))
    else:
        events = st.lists(_events(request), max_size=3)
        document = draw.draw(payloads(events) if shape == "payload" else JSON)
        body = json.dumps(document).encode()
    status, _ = await served.post(body)
    observe(f"HTTP {status}")  # --hypothesis-show-statistics shows both paths are exercised
    assert status in (200, 400)
    await assert_untouched(served, request)


def test_the_reply_session_takes_its_proxy_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Replies skip the SDK's per-request environment reads but still honour a proxy."""
    from tapgate.channels.line.reply import _proxy_for

    for name in ("HTTPS_PROXY", "https_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    assert _proxy_for("https://api.line.me") is None
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.internal:3128")
    assert _proxy_for("https://api.line.me") == "http://proxy.internal:3128"
    monkeypatch.setenv("NO_PROXY", "api.line.me")
    assert _proxy_for("https://api.line.me") is None


@settings(max_examples=300, deadline=None)
@given(draw=st.data())
def test_the_event_reader_raises_nothing_but_malformed(draw: st.DataObject) -> None:
    """The fence around line-bot-sdk's parser: any signed body is events or ``Malformed``."""
    shape = draw.draw(st.sampled_from(["payload", "payload", "json", "bytes"]))
    if shape == "bytes":
        body = draw.draw(st.binary(max_size=256))
    else:
        events = st.lists(_events("r" * 22), max_size=3)
        document = draw.draw(payloads(events) if shape == "payload" else JSON)
        body = json.dumps(document).encode()
    reader = EventReader(SECRET)
    try:
        events_read = reader.read(body, line_signature(SECRET.encode(), body))
    except Malformed:
        observe("malformed")
        return
    observe("read")
    assert all(event.event_id and isinstance(event.redelivery, bool) for event in events_read)
