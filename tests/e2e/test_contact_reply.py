"""Questions to a human (``CONTACT_TOOL``): shown with Reply, answered on Slack and on LINE.

Three layers, each with real parts only:

- the wire formats (postback data, the typed ``answer <ref>: …`` form) and the
  renderers, checked by the SDKs' own models and the fake LINE API's rules;
- Slack through ``build_app``: the real SlackNotifier posts to the fake Slack
  API, signed interactions open the answer modal, its submission answers;
- LINE through ``build_app``: the real LineNotifier pushes to the fake LINE
  API, the test taps the Reply button it pushed and sends the text that
  button pre-fills, signed for real, and reads the replies the fake recorded.

Time is a manual clock; the database is a real SQLite file.
"""

from __future__ import annotations

import asyncio
import io
import json
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from linebot.v3.messaging import FlexMessage, PostbackAction
from slack_sdk.models.blocks import Block
from slack_sdk.models.views import View
from sqlalchemy import text as sql

from tapgate.channels.console.notifier import ConsoleNotifier
from tapgate.channels.line.flex import render_line, utf16_len
from tapgate.channels.line.notifier import LineNotifier
from tapgate.channels.slack.blocks import render_slack, render_slack_resolved
from tapgate.channels.slack.notifier import SlackNotifier
from tapgate.channels.slack.text import escape
from tapgate.channels.slack.webhook import SlackWebhook
from tapgate.config import Config, parse_config
from tapgate.decisions.buttons import (
    SLACK_ACTIONS,
    answer_prefill,
    parse_answer,
    parse_postback_data,
    postback_data,
)
from tapgate.decisions.texts import title
from tapgate.delivery.presentation import ApprovalView, present
from tapgate.gate.clock import ManualClock
from tapgate.gate.gate import Gate
from tapgate.gate.models import CONTACT_TOOL, Delivery, Request, ToolCall, args_digest
from tapgate.server.app import build_app
from tapgate.server.keys import METRICS
from tests.factories import make_request
from tests.fakes import FakeLine, FakeSlack, SlackMessage, taps
from tests.fakes import served as served_world
from tests.fakes._line_rules import check_messages
from tests.fakes.receivers import slack_webhook
from tests.fakes.served import LINE_TOKEN, SLACK_SECRET, TEAM, ServedApp, channels, slack_card
from tests.fakes.slack import DEFAULT_BOT_TOKEN
from tests.fakes.taps import slack_form, slack_headers

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
QID = "Qm9vdHN0cmFwLXF1ZXN0aW9u"
GITHUB_TOKEN = "ghp" + "_" + "R2l0SHViVG9rZW5Gb3JUZXN0czAxMjM0NTY3"  # assembled: not a real one
NOT_APPROVER = "You are not an approver for this request."
NOT_QUESTION = "This request is not a question; use its Approve / Deny buttons."


def question(
    message: Any = "Deploy to eu-west-1 or us-east-1?",
    subject: str | None = "Deploy window",
    **overrides: Any,
) -> Request:
    arguments: dict[str, Any] = {"message": message}
    if subject is not None:
        arguments["subject"] = subject
    base = Request(
        id=QID,
        agent="deploy-bot",
        session="sess-42",
        tool=CONTACT_TOOL,
        arguments=arguments,
        args_digest=args_digest(arguments),
        fingerprint="fp",
        risk="write",
        rule="policy.rules[0]",
        reason="",
        approvers=("alice", "bob"),
        status="pending",
        created_at=T0,
        expires_at=T0 + timedelta(minutes=5),
    )
    return replace(base, **overrides)


def view(request: Request | None = None) -> ApprovalView:
    return present(request or question(), now=T0)


def walk(node: Any) -> list[dict[str, Any]]:
    """Every dict inside a message, depth first."""
    found: list[dict[str, Any]] = []
    if isinstance(node, dict):
        found.append(node)
        for value in node.values():
            found += walk(value)
    elif isinstance(node, list):
        for item in node:
            found += walk(item)
    return found


def assert_valid_slack(message: dict[str, Any]) -> None:
    assert message["text"] and len(message["text"]) <= 3000
    assert 0 < len(message["blocks"]) <= 50
    for block in message["blocks"]:
        parsed = Block.parse(block)
        assert parsed is not None
        parsed.validate_json()  # raises past any of Block Kit's limits
        assert parsed.to_dict() == block
    for node in walk(message["blocks"]):
        if node.get("type") in ("plain_text", "mrkdwn"):
            assert 0 < len(node["text"]) <= 3000


def assert_valid_line(message: dict[str, Any]) -> None:
    assert FlexMessage.from_dict(message).to_dict() == message
    assert check_messages([message]) == []  # what the fake LINE API would answer 400 for
    assert 0 < utf16_len(message["altText"]) <= 400
    assert len(json.dumps(message).encode()) < 30_000
    for node in walk(message):
        if node.get("type") == "text":
            assert node["text"] and utf16_len(node["text"]) <= 2000
        if node.get("type") == "postback":
            PostbackAction.from_dict(node)


def buttons(message: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Slack buttons by action id."""
    return {n["action_id"]: n for n in walk(message["blocks"]) if n.get("type") == "button"}


def line_actions(message: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """LINE postback actions by label."""
    return {n["label"]: n for n in walk(message) if n.get("type") == "postback"}


# -- the wire formats ------------------------------------------------------------------


def test_reply_and_dismiss_join_version_one_and_old_buttons_parse_as_before() -> None:
    for action in ("reply", "dismiss"):
        data = postback_data(action, "i" * 64)
        assert data == f"v=1&a={action}&r={'i' * 64}" and len(data) <= 95
        assert parse_postback_data(data) == (action, "i" * 64)
    for action in ("approve", "deny", "approve_session"):
        assert parse_postback_data(f"v=1&a={action}&r=abc") == (action, "abc")
    assert SLACK_ACTIONS["tapgate_reply"] == "reply"
    assert SLACK_ACTIONS["tapgate_dismiss"] == "dismiss"
    assert SLACK_ACTIONS["tapgate_approve"] == "approve"


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("answer Qm9vdHN0: EU please", ("Qm9vdHN0", "EU please")),
        ("Answer Qm9vdHN0: EU", ("Qm9vdHN0", "EU")),  # phones capitalise the first letter
        ("ANSWER Qm9vdHN0 :EU", ("Qm9vdHN0", "EU")),
        ("  answer\u3000Qm9vdHN0\uff1a はい ", ("Qm9vdHN0", "はい")),  # a Japanese keyboard
        ("answer Qm9vdHN0: line one\nline two\n", ("Qm9vdHN0", "line one\nline two")),
        (f"answer {QID}: yes", (QID, "yes")),
        ("answer Qm9vdHN0:", ("Qm9vdHN0", "")),
        ("answer Qm9vdHN0:   \n ", ("Qm9vdHN0", "")),
        ("answer me: why?", None),  # too short to be a reference: ordinary chat
        ("answer Qm9v: x", None),
        ("answer Qm9vdHN0 EU", None),  # no colon
        ("please answer Qm9vdHN0: EU", None),
        ("answer Qm9v/dHN0: EU", None),
        ("answer " + "a" * 65 + ": EU", None),
        ("id", None),
        ("", None),
        (None, None),
        (42, None),
    ],
)
def test_parse_answer(text: Any, parsed: tuple[str, str] | None) -> None:
    assert parse_answer(text) == parsed


@given(st.from_regex(r"[A-Za-z0-9_-]{6,64}", fullmatch=True), st.text(max_size=50))
def test_the_prefill_plus_any_answer_parses_back(request_id: str, answer: str) -> None:
    prefill = answer_prefill(request_id)
    assert len(prefill) <= 300  # LINE's fillInText limit
    assert parse_answer(prefill + answer) == (request_id[:8], answer.strip())


@given(st.text(max_size=300))
def test_parse_answer_never_raises(text: str) -> None:
    result = parse_answer(text)
    assert result is None or 6 <= len(result[0]) <= 64


def test_answer_prefill_refuses_a_malformed_id() -> None:
    with pytest.raises(ValueError, match="prefill"):
        answer_prefill("a b")


@pytest.mark.parametrize(
    ("subject", "shown"),
    [
        ("Deploy window", "Deploy window"),
        (None, "question"),
        ("  ", "question"),
        # The one mask of core.masking, as in the messages: the kind of key stays readable.
        ("Rotate key " + GITHUB_TOKEN, "Rotate key ghp_****"),
        ("use password=hunter2 now", "use password=******** now"),  # short, but named a secret
        ("Internationalization matters", "Internationalization matters"),  # no digit: a word
        ("a\x1b[2Jb\u202ec\nd", "a[2Jbc d"),
        ("x" * 10 + " " + "y" * 60, "x" * 10 + " " + "y" * 28 + "…"),
    ],
)
def test_replies_name_a_question_by_a_tamed_subject(subject: str | None, shown: str) -> None:
    request = question(subject=subject)
    assert title(request) == shown
    assert len(title(request)) <= 40
    assert title(make_request(T0, tool="deploy")) == "deploy"


# -- rendering -------------------------------------------------------------------------


def test_slack_shows_the_question_with_reply_and_dismiss_only() -> None:
    message = render_slack(view())
    assert_valid_slack(message)
    assert list(buttons(message)) == ["tapgate_reply", "tapgate_dismiss"]
    assert {b["value"] for b in buttons(message).values()} == {QID}
    assert buttons(message)["tapgate_reply"]["style"] == "primary"
    assert "confirm" in buttons(message)["tapgate_dismiss"]
    assert message["blocks"][0]["text"]["text"] == "Question: Deploy window"
    texts = [n["text"] for n in walk(message["blocks"]) if n.get("type") == "plain_text"]
    assert "Deploy to eu-west-1 or us-east-1?" in texts
    assert message["text"].startswith("Question - Deploy window: Deploy to eu-west-1")
    assert "Risk" not in json.dumps(message)  # a question has no risk to weigh


def test_slack_question_text_stays_inert_and_masked() -> None:
    hostile = f"<!channel> <@U123> <https://evil.example|click> *bold* ```x``` {GITHUB_TOKEN}"
    message = render_slack(view(question(message=hostile, subject="<!here> & co")))
    assert_valid_slack(message)
    dumped = json.dumps(message)
    for raw in ("<!channel>", "<@U123>", "<https://", "<!here>"):
        assert raw not in dumped
    assert "&lt;!channel&gt;" in dumped and "&amp; co" in dumped
    assert GITHUB_TOKEN[4:] not in dumped
    [body] = [
        b for b in message["blocks"] if b["type"] == "section" and "text" in b
    ]  # plain_text: Slack parses no markup in it
    assert body["text"]["type"] == "plain_text" and "*bold*" in body["text"]["text"]


def test_line_reply_button_opens_the_keyboard_with_the_answer_prefix() -> None:
    message = render_line(view())
    assert_valid_line(message)
    actions = line_actions(message)
    assert list(actions) == ["Reply", "Dismiss"]
    reply = actions["Reply"]
    assert reply["inputOption"] == "openKeyboard"
    assert reply["fillInText"] == f"answer {QID[:8]}: "
    assert "displayText" not in reply  # the tap itself puts nothing in the chat
    assert parse_postback_data(reply["data"]) == ("reply", QID)
    sdk = PostbackAction.from_dict(reply)
    assert (sdk.input_option, sdk.fill_in_text) == ("openKeyboard", f"answer {QID[:8]}: ")
    assert parse_postback_data(actions["Dismiss"]["data"]) == ("dismiss", QID)
    assert parse_answer(reply["fillInText"] + "EU") == (QID[:8], "EU")
    header = [n["text"] for n in walk(message["contents"]["header"]) if n.get("type") == "text"]
    assert header == ["Question", "Deploy window"]
    assert message["altText"] == "Question from deploy-bot: Deploy window"


def test_line_question_is_masked_and_shown_verbatim() -> None:
    text = f"<b>Which?</b> token {GITHUB_TOKEN}"
    message = render_line(view(question(message=text, subject=None)))
    assert_valid_line(message)
    dumped = json.dumps(message, ensure_ascii=False)
    assert "<b>Which?</b>" in dumped  # LINE shows plain text: nothing to escape
    assert GITHUB_TOKEN[4:] not in dumped
    assert message["altText"].startswith("Question from deploy-bot: <b>Which?</b> token ghp_")


@pytest.mark.parametrize("shape", ["long_lines", "many_lines", "emoji"])
def test_a_huge_question_stays_inside_every_limit(shape: str) -> None:
    text = {
        "long_lines": "x" * 100_000,
        "many_lines": "\n".join(f"line {n}" for n in range(5000)),
        "emoji": "🚀" * 20_000,
    }[shape]
    request = question(message=text, subject="s" * 500)
    slack, line = render_slack(view(request)), render_line(view(request))
    assert_valid_slack(slack)
    assert_valid_line(line)
    assert "… " in json.dumps(slack, ensure_ascii=False)  # the cut is visible
    assert "… " in json.dumps(line, ensure_ascii=False)


def test_a_question_without_a_subject_or_text_still_gets_reply() -> None:
    for request in (question(subject=None), question(message={"odd": ["shape"]}, subject=None)):
        message = render_slack(view(request))
        assert_valid_slack(message)
        assert message["blocks"][0]["text"]["text"] == "Question from deploy-bot"
        assert list(buttons(message)) == ["tapgate_reply", "tapgate_dismiss"]
        assert_valid_line(render_line(view(request)))
    odd = json.dumps(render_slack(view(question(message={"odd": ["shape"]}))))
    assert "odd" in odd  # what the agent sent is shown, not dropped


def test_other_arguments_of_a_question_stay_visible() -> None:
    request = question(arguments={"message": "Go?", "channel": "ops", "api_key": "k-1"})
    slack, line = render_slack(view(request)), render_line(view(request))
    assert_valid_slack(slack)
    assert_valid_line(line)
    for dumped in (json.dumps(slack), json.dumps(line)):
        assert "Other arguments" in dumped and "ops" in dumped and "k-1" not in dumped


def test_a_question_never_offers_allow_for_session() -> None:
    current = view(question(session="s1", grantable=True))
    assert not current.can_allow_session
    assert "tapgate_approve_session" not in json.dumps(render_slack(current))


def test_a_tool_call_with_message_arguments_is_not_a_question() -> None:
    request = question(tool="send_message")
    message = render_slack(view(request))
    assert list(buttons(message)) == [
        "tapgate_approve",
        "tapgate_deny",
        "tapgate_approve_session",
        "tapgate_edit",
    ]
    assert "Reply" not in json.dumps(render_line(view(request)))


def test_slack_answered_shows_who_answered_and_the_answer() -> None:
    answer = "EU, after 18:00.\nNot on <!here> Friday."
    message = render_slack_resolved(
        view(), status="approved", by="alice", at=T0 + timedelta(minutes=3), reason=answer
    )
    assert_valid_slack(message)
    assert not [b for b in message["blocks"] if b["type"] == "actions"]
    outcome = message["blocks"][-1]
    assert outcome["block_id"] == f"tapgate_resolved:{QID}"
    assert outcome["text"] == {
        "type": "plain_text",
        "text": "💬 Answered by alice at 12:03 UTC: EU, after 18:00.\nNot on &lt;!here&gt; Friday.",
    }
    assert message["blocks"][0]["text"]["text"] == "Answered: Deploy window"
    assert message["text"].startswith("💬 Answered by alice at 12:03 UTC: EU, after 18:00.")
    assert "(in 5 min)" not in json.dumps(message)


def test_slack_answered_cuts_a_huge_answer_and_masks_secrets() -> None:
    answer = f"use {GITHUB_TOKEN}\n" + "\n".join(f"step {n}" for n in range(3000))
    message = render_slack_resolved(view(), status="approved", by="alice", at=T0, reason=answer)
    assert_valid_slack(message)
    text = message["blocks"][-1]["text"]["text"]
    assert text.startswith("💬 Answered by alice at 12:00 UTC: use ghp_****")
    assert "more line" in text
    assert GITHUB_TOKEN[4:] not in json.dumps(message)


@pytest.mark.parametrize(
    ("status", "by", "reason", "line"),
    [
        ("denied", "bob", None, "🔕 Dismissed by bob at 12:03 UTC"),
        ("expired", None, None, "⌛ Expired at 12:03 UTC"),
        ("cancelled", "deploy-bot", "not needed", "🚫 Cancelled by deploy-bot at 12:03 UTC"),
        ("approved", "alice", None, "💬 Answered by alice at 12:03 UTC"),
    ],
)
def test_slack_other_outcomes_of_a_question(
    status: Any, by: str | None, reason: str | None, line: str
) -> None:
    message = render_slack_resolved(
        view(), status=status, by=by, at=T0 + timedelta(minutes=3), reason=reason
    )
    assert_valid_slack(message)
    outcome = message["blocks"][-1]
    assert outcome["type"] == "context"
    assert outcome["elements"][0]["text"] == line
    if reason:
        assert outcome["elements"][1]["text"] == f"Reason: {reason}"


async def test_console_prints_the_question_and_the_answer() -> None:
    stream = io.StringIO()
    notifier = ConsoleNotifier(stream)
    request = question(message=f"Which region? ({GITHUB_TOKEN})")
    delivery = Delivery(approver="alice", channel="console", address="alice")
    receipt = await notifier.send(request, delivery, key="k1")
    out = stream.getvalue()
    assert out.startswith(f"[tapgate] Question: Deploy window (request {QID})\n")
    assert "    Which region? (ghp_****)" in out
    assert f'tapgate resolve {QID} approve --as alice --reason "..."' in out
    assert f"tapgate resolve {QID} deny --as alice\n" in out
    assert GITHUB_TOKEN[4:] not in out
    answered = replace(
        request,
        status="approved",
        resolved_by="alice",
        resolved_at=T0 + timedelta(minutes=3),
        resolution_reason="EU",
    )
    await notifier.update(answered, receipt)
    assert stream.getvalue().endswith(
        f"[tapgate] request {QID}: 💬 Answered by alice at 12:03 UTC: EU\n"
    )


# -- shared: the app under test ------------------------------------------------------------

ALICE_SLACK, BOB_SLACK, CAROL_SLACK, STRANGER_SLACK = "U0ALICE", "U0BOB", "U0CAROL", "U0STRANGER"
ALICE_LINE = "U" + "a1" * 16
BOB_LINE = "U" + "b2" * 16
CAROL_LINE = "U" + "c3" * 16  # an approver, but not of questions
STRANGER_LINE = "U" + "d4" * 16
SHARED_CHANNEL = "C0APPROVALS"

Client = TestClient[web.Request, web.Application]


def make_config(
    db_url: str, *, slack_url: str | None = None, line_url: str | None = None
) -> Config:
    return parse_config(
        {
            "store": {"url": db_url},
            "approvers": [
                {
                    "name": "alice",
                    "slack": ALICE_SLACK,
                    "slack_team": TEAM,
                    "line": ALICE_LINE,
                    "groups": ["oncall"],
                },
                {
                    "name": "bob",
                    "slack": BOB_SLACK,
                    "slack_team": TEAM,
                    "line": BOB_LINE,
                    "groups": ["oncall"],
                },
                {"name": "carol", "slack": CAROL_SLACK, "slack_team": TEAM, "line": CAROL_LINE},
            ],
            "channels": channels(slack_url=slack_url, line_url=line_url),
            "policy": {
                "rules": [
                    {"tool": CONTACT_TOOL, "action": "ask", "approvers": ["oncall"], "timeout": 60},
                    {"tool": "deploy", "action": "ask", "approvers": ["oncall"], "timeout": 60},
                ]
            },
        },
        env={},
    )


until = partial(served_world.until, timeout=5.0)  # a hang fails this suite in 5 s


@pytest.fixture
def db_url(migrated_sqlite_url: str) -> str:
    """SQLite: the store's own suite covers PostgreSQL; this one is about the chat paths."""
    return migrated_sqlite_url


async def ask(
    gate: Gate, message: str = "EU or US?", subject: str | None = "Deploy window"
) -> Request:
    arguments = {"message": message} | ({"subject": subject} if subject else {})
    ticket = await gate.submit(
        ToolCall(tool=CONTACT_TOOL, arguments=arguments, agent="ci"), question=True
    )
    assert ticket.request is not None
    return ticket.request


async def ask_deploy(gate: Gate) -> Request:
    ticket = await gate.submit(ToolCall(tool="deploy", arguments={"env": "prod"}, agent="ci"))
    assert ticket.request is not None
    return ticket.request


async def assert_pending(gate: Gate, request: Request) -> None:
    current = await gate.get_request(request.id)
    assert current.status == "pending"
    assert current.resolved_by is None and current.resolution_reason is None


async def refusals(gate: Gate, request: Request) -> list[tuple[str, str]]:
    audit = await gate.store.audit_log(request_id=request.id)
    return [(e.actor, e.detail["why"]) for e in audit if e.event == "refused"]


# -- Slack ---------------------------------------------------------------------------------


@dataclass
class SlackServed(ServedApp):
    """The real app, the fake Slack API and the manual clock."""

    slack: FakeSlack

    @property
    def webhook(self) -> SlackWebhook:
        return slack_webhook(self.app)

    async def post(self, payload: Any) -> tuple[int, str]:
        body = slack_form(payload)
        headers = slack_headers(SLACK_SECRET, body, int(self.clock.now().timestamp()))
        async with self.client.post("/webhooks/slack", data=body, headers=headers) as response:
            return response.status, await response.text()

    async def posted(self, request: Request, user: str) -> SlackMessage:
        return await slack_card(self.slack, user, request.id, timeout=5.0)

    async def settled(self) -> None:
        await until(lambda: not self.webhook._tasks)  # when to look, never what to assert

    async def told(self, user: str, count: int = 1) -> list[str]:
        def mine() -> list[str]:
            return [e.text or "" for e in self.slack.ephemerals if e.user == user]

        await until(lambda: len(mine()) >= count)
        return mine()

    def click(
        self, action: str, request: Request, user: str = ALICE_SLACK, team: str = TEAM
    ) -> dict[str, Any]:
        """A ``block_actions`` payload for one button, shaped like Slack's.

        The button is in a shared channel, where anyone can click it (and be
        told ephemerally why not).
        """
        return {
            "type": "block_actions",
            "user": {"id": user, "username": user.lower(), "team_id": team},
            "api_app_id": "A0TAPGATE",
            "container": {"type": "message", "channel_id": SHARED_CHANNEL},
            "trigger_id": f"{uuid.uuid4().int % 10**12}.{uuid.uuid4().hex}",
            "team": {"id": team, "domain": "tapgate"},
            "channel": {"id": SHARED_CHANNEL, "name": "approvals"},
            "response_url": self.slack.response_url(uuid.uuid4().hex),
            "actions": [
                {
                    "action_id": f"tapgate_{action}",
                    "block_id": f"tapgate:{request.id}",
                    "value": request.id,
                    "type": "button",
                }
            ],
        }

    async def open_modal(self, request: Request, user: str = ALICE_SLACK) -> dict[str, Any]:
        before = len(self.slack.views)
        tapped = self.click("reply", request, user)
        assert (await self.post(tapped))[0] == 200
        await until(lambda: len(self.slack.views) > before)
        opened = self.slack.views[-1]
        assert opened.trigger_id == tapped["trigger_id"]
        return opened.view


def submission(
    modal: dict[str, Any], answer: str | None, user: str = ALICE_SLACK
) -> dict[str, Any]:
    """A ``view_submission`` of the answer modal, as Slack sends it back."""
    return {
        "type": "view_submission",
        "team": {"id": TEAM, "domain": "tapgate"},
        "user": {"id": user, "username": user.lower(), "team_id": TEAM},
        "api_app_id": "A0TAPGATE",
        "trigger_id": f"{uuid.uuid4().int % 10**12}.{uuid.uuid4().hex}",
        "view": {
            "id": "V0000000001",
            "team_id": TEAM,
            "type": "modal",
            "callback_id": modal["callback_id"],
            "private_metadata": modal["private_metadata"],
            "blocks": modal["blocks"],
            "title": modal["title"],
            "state": {
                "values": {"answer": {"answer": {"type": "plain_text_input", "value": answer}}}
            },
        },
        "response_urls": [],
    }


@pytest.fixture
async def fake_slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack() as fake:
        yield fake


@pytest.fixture
async def slack_app(
    db_url: str,  # the database and the fake outlive the app: requested before the client
    fake_slack: FakeSlack,
    clock: ManualClock,
    aiohttp_client: Callable[[web.Application], Awaitable[Client]],
) -> SlackServed:
    notifier = SlackNotifier(DEFAULT_BOT_TOKEN, api_base_url=fake_slack.url, timeout=5)
    config = make_config(db_url, slack_url=fake_slack.url)
    app = build_app(config, clock=clock, notifiers=[notifier])
    client = await aiohttp_client(app)
    return SlackServed(app=app, client=client, slack=fake_slack, clock=clock)


async def test_slack_reply_modal_answer_reaches_the_agent_and_updates_every_message(
    slack_app: SlackServed,
) -> None:
    served = slack_app
    request = await ask(served.gate, "Which region, <!channel>?")
    message, other = (
        await served.posted(request, ALICE_SLACK),
        await served.posted(request, BOB_SLACK),
    )
    assert list(buttons({"blocks": message.blocks})) == ["tapgate_reply", "tapgate_dismiss"]
    waiter = asyncio.create_task(served.gate.wait(request.id))

    modal = await served.open_modal(request)
    View(**modal).validate_json()  # Slack's own model accepts the modal
    assert modal["callback_id"] == "tapgate_reply"
    [answer_input] = [b for b in modal["blocks"] if b["type"] == "input"]
    assert answer_input.get("optional", False) is False
    assert answer_input["element"]["multiline"] is True
    assert json.loads(modal["private_metadata"]) == {"r": request.id, "c": SHARED_CHANNEL}
    assert not waiter.done()  # opening the dialog decides nothing

    answer = "EU-west, after 18:00 UTC.\nNot <!here>."
    assert await served.post(submission(modal, f"  {answer}  ")) == (200, "")
    decision = await asyncio.wait_for(waiter, 5)
    assert decision is not None
    assert (decision.status, decision.verdict, decision.decided_by) == (
        "approved",
        "allow",
        "alice",
    )
    assert decision.reason == answer

    both = (message, other)
    await until(lambda: all("Answered by alice" in (m.text or "") for m in both))
    for m in both:
        blocks = json.dumps(m.blocks)
        assert "tapgate_reply" not in blocks
        assert (
            "💬 Answered by alice at 00:00 UTC: EU-west" in json.loads(blocks)[-1]["text"]["text"]
        )
    await served.settled()
    assert served.slack.ephemerals == []  # the rewritten message is the confirmation
    assert served.app[METRICS].registry.get_sample_value("tapgate_tap_to_decision_seconds_count")


async def test_slack_reply_by_a_non_approver_opens_nothing_and_changes_nothing(
    slack_app: SlackServed,
) -> None:
    served = slack_app
    request = await ask(served.gate)
    for user in (CAROL_SLACK, STRANGER_SLACK):
        assert (await served.post(served.click("reply", request, user)))[0] == 200
        assert await served.told(user) == [NOT_APPROVER]
    assert served.slack.views == []
    await assert_pending(served.gate, request)
    assert await refusals(served.gate, request) == [
        ("carol", "not an approver"),
        (f"slack:{STRANGER_SLACK}", "not an approver"),
    ]


async def test_slack_a_forged_answer_from_a_non_approver_is_refused(slack_app: SlackServed) -> None:
    """Someone replays the modal's shape with their own user id: the gate still says no."""
    served = slack_app
    request = await ask(served.gate)
    modal = await served.open_modal(request)  # alice's modal
    assert (await served.post(submission(modal, "yes", user=CAROL_SLACK)))[0] == 200
    assert await served.told(CAROL_SLACK) == [NOT_APPROVER]
    await assert_pending(served.gate, request)
    assert await refusals(served.gate, request) == [("carol", "not an approver")]


async def test_slack_a_blank_answer_keeps_the_modal_open(slack_app: SlackServed) -> None:
    served = slack_app
    request = await ask(served.gate)
    modal = await served.open_modal(request)
    status, body = await served.post(submission(modal, " \n\t "))
    assert status == 200
    assert json.loads(body) == {
        "response_action": "errors",
        "errors": {"answer": "Type an answer: the agent is waiting for it."},
    }
    await served.settled()
    await assert_pending(served.gate, request)


async def test_slack_late_answers_are_told_who_answered_first(slack_app: SlackServed) -> None:
    served = slack_app
    request = await ask(served.gate)
    bobs = await served.open_modal(request, BOB_SLACK)
    alices = await served.open_modal(request, ALICE_SLACK)
    await served.post(submission(alices, "EU"))
    decision = await asyncio.wait_for(served.gate.wait(request.id), 5)
    assert decision is not None and decision.reason == "EU"

    await served.post(submission(bobs, "US", user=BOB_SLACK))
    already = "Already answered by alice at 00:00 UTC - Deploy window."
    assert await served.told(BOB_SLACK) == [already]
    await served.post(served.click("reply", request, BOB_SLACK))  # no modal for a closed question
    assert await served.told(BOB_SLACK, 2) == [already, already]
    assert len(served.slack.views) == 2
    assert (await served.gate.get_request(request.id)).resolution_reason == "EU"


async def test_slack_an_answer_after_expiry_is_refused(slack_app: SlackServed) -> None:
    served = slack_app
    request = await ask(served.gate)
    modal = await served.open_modal(request)
    served.clock.advance(61)
    await served.post(submission(modal, "EU"))
    # An ephemeral is Slack mrkdwn: an id's "_" shows as a lookalike (core.slack_text).
    expired = escape(f"This request expired - Deploy window (request {request.id[:8]}).")
    assert await served.told(ALICE_SLACK) == [expired]
    await served.post(served.click("reply", request))
    assert await served.told(ALICE_SLACK, 2) == [expired, expired]
    current = await served.gate.get_request(request.id)
    assert (current.status, current.resolution_reason) == ("expired", None)


async def test_slack_dismiss_denies_the_question(slack_app: SlackServed) -> None:
    served = slack_app
    request = await ask(served.gate)
    message = await served.posted(request, BOB_SLACK)
    waiter = asyncio.create_task(served.gate.wait(request.id))
    assert (await served.post(served.click("dismiss", request, BOB_SLACK)))[0] == 200
    decision = await asyncio.wait_for(waiter, 5)
    assert decision is not None
    assert (decision.status, decision.verdict, decision.decided_by) == ("denied", "deny", "bob")
    await until(lambda: "Dismissed by bob" in (message.text or ""))
    assert served.slack.views == []


async def test_slack_reply_and_dismiss_never_decide_a_tool_call(slack_app: SlackServed) -> None:
    served = slack_app
    deploy = await ask_deploy(served.gate)
    assert (await served.post(served.click("reply", deploy)))[0] == 200
    assert await served.told(ALICE_SLACK) == [NOT_QUESTION]
    assert served.slack.views == []
    for user in (ALICE_SLACK, BOB_SLACK):
        await served.posted(deploy, user)
    question_modal = await served.open_modal(await ask(served.gate))
    served.clock.advance(1)  # Slack's pace: a second message to a DM waits a second
    metadata = {"r": deploy.id, "c": SHARED_CHANNEL}
    forged = {**question_modal, "private_metadata": json.dumps(metadata)}
    await served.post(submission(forged, "yes, deploy"))
    await served.post(served.click("dismiss", deploy))
    assert await served.told(ALICE_SLACK, 3) == [NOT_QUESTION] * 3
    await served.settled()
    await assert_pending(served.gate, deploy)
    assert await refusals(served.gate, deploy) == [("alice", "not a question")] * 2


async def test_slack_reply_from_another_workspace_is_refused(slack_app: SlackServed) -> None:
    served = slack_app
    request = await ask(served.gate)
    await served.post(served.click("reply", request, ALICE_SLACK, team="T0ELSEWHERE"))
    assert await served.told(ALICE_SLACK) == [NOT_APPROVER]
    assert served.slack.views == []
    await assert_pending(served.gate, request)


async def test_slack_ephemerals_cannot_mention_through_a_subject(slack_app: SlackServed) -> None:
    served = slack_app
    request = await ask(served.gate, subject="<!channel> ping")
    await served.gate.resolve(request.id, "approve", by="alice", reason="done")
    await served.post(served.click("reply", request, BOB_SLACK))
    [told] = await served.told(BOB_SLACK)
    assert told == "Already answered by alice at 00:00 UTC - &lt;!channel&gt; ping."


# -- LINE ----------------------------------------------------------------------------------


class LineServed(served_world.LineServed):
    """The real app, the fake LINE API and the manual clock; the pushes the notifier made."""

    async def pushed(self, request: Request, user: str) -> dict[str, Any]:
        """The Flex message of ``request`` the real LineNotifier pushed to ``user``."""

        def find() -> dict[str, Any] | None:
            mine = [m for m in self.line.pushed_to(user) if request.id in json.dumps(m)]
            return mine[0] if mine else None

        await until(lambda: find() is not None)
        found = find()
        assert found is not None
        return found


def line_event(
    kind: str, user: str | None = ALICE_LINE, source: str = "user", **content: Any
) -> dict[str, Any]:
    """One webhook event shaped like LINE's, from alice unless ``user`` says otherwise."""
    return taps.line_event(kind, user, source=source, **content)


def typed(text: str, user: str = ALICE_LINE, **kw: Any) -> dict[str, Any]:
    """A text message as LINE delivers it."""
    message = {
        "id": str(uuid.uuid4().int % 10**18),
        "type": "text",
        "quoteToken": "q",
        "text": text,
    }
    return line_event("message", user, message=message, **kw)


def tapped(action: dict[str, Any], user: str = ALICE_LINE) -> dict[str, Any]:
    """The postback event of tapping ``action`` (a postback action from a pushed message)."""
    return line_event("postback", user, postback={"data": action["data"]})


@pytest.fixture
async def fake_line() -> AsyncIterator[FakeLine]:
    async with FakeLine(access_token=LINE_TOKEN) as fake:
        yield fake


@pytest.fixture
async def line_app(
    db_url: str,  # the database and the fake outlive the app: requested before the client
    fake_line: FakeLine,
    clock: ManualClock,
    aiohttp_client: Callable[[web.Application], Awaitable[Client]],
) -> LineServed:
    notifier = LineNotifier(LINE_TOKEN, api_base_url=fake_line.url, timeout=5)
    config = make_config(db_url, line_url=fake_line.url)
    app = build_app(config, clock=clock, notifiers=[notifier])
    client = await aiohttp_client(app)
    return LineServed(app=app, client=client, line=fake_line, clock=clock)


def answer_sent(request: Request, what: str = "Deploy window") -> str:
    return f"Answer sent - {what} (request {request.id[:8]})"


async def test_line_reply_button_then_typed_answer_resolves(line_app: LineServed) -> None:
    served = line_app
    request = await ask(served.gate, "Which region?")
    pushed = await served.pushed(request, ALICE_LINE)
    assert_valid_line(pushed)  # and the fake LINE API accepted the push (it checks too)
    reply = line_actions(pushed)["Reply"]
    waiter = asyncio.create_task(served.gate.wait(request.id))

    button = tapped(reply)
    assert await served.post(button) == 200
    prefix = f"answer {request.id[:8]}:"
    assert served.replied_to(button) == [f'Type your answer after "{prefix}" and send it.']
    assert not waiter.done()

    answer = typed(reply["fillInText"] + "EU-west, after 18:00.\nThanks!")
    assert await served.post(answer) == 200
    decision = await asyncio.wait_for(waiter, 5)
    assert decision is not None
    assert (decision.status, decision.verdict, decision.decided_by) == (
        "approved",
        "allow",
        "alice",
    )
    assert decision.reason == "EU-west, after 18:00.\nThanks!"
    assert served.replied_to(answer) == [answer_sent(request)]
    audit = await served.gate.store.audit_log(request_id=request.id)
    [decided] = [e for e in audit if e.event == "approved"]
    assert (decided.actor, decided.detail["channel"], decided.detail["user_id"]) == (
        "alice",
        "line",
        ALICE_LINE,
    )
    assert served.app[METRICS].registry.get_sample_value("tapgate_tap_to_decision_seconds_count")


async def test_line_full_id_and_no_subject_work_too(line_app: LineServed) -> None:
    served = line_app
    request = await ask(served.gate, subject=None)
    event = typed(f"Answer {request.id}： yes")  # a capital, a full-width colon, the full id
    assert await served.post(event) == 200
    assert served.replied_to(event) == [answer_sent(request, "question")]
    assert (await served.gate.get_request(request.id)).resolution_reason == "yes"


async def test_line_a_redelivered_answer_is_applied_and_answered_once(line_app: LineServed) -> None:
    served = line_app
    request = await ask(served.gate)
    first = typed(f"answer {request.id[:8]}: EU")
    again = {**first, "deliveryContext": {"isRedelivery": True}}
    assert await served.post(first) == 200
    before = await served.gate.store.audit_log(request_id=request.id)
    assert await served.post(again) == 200
    assert await served.post(first) == 200  # a replay of the very same bytes
    assert [m["text"] for r in served.line.replies for m in r.messages] == [answer_sent(request)]
    assert await served.gate.store.audit_log(request_id=request.id) == before


async def test_line_a_redelivered_refusal_is_answered_once(line_app: LineServed) -> None:
    served = line_app
    await ask(served.gate)
    first = typed("answer ZZZZZZZZ: EU")
    assert await served.post(first, {**first, "deliveryContext": {"isRedelivery": True}}) == 200
    assert len(served.line.replies) == 1


@pytest.mark.parametrize("user", [CAROL_LINE, STRANGER_LINE])
async def test_line_an_answer_from_a_non_approver_is_refused(
    line_app: LineServed, user: str
) -> None:
    served = line_app
    request = await ask(served.gate)
    by_prefix = typed(f"answer {request.id[:8]}: EU", user=user)
    by_id = typed(f"answer {request.id}: EU", user=user)
    assert await served.post(by_prefix, by_id) == 200
    # A prefix is looked up among the sender's own questions only: nothing to find.
    assert served.replied_to(by_prefix) == [
        f"No question for you matches {request.id[:8]}; tap Reply on the question to answer it."
    ]
    assert served.replied_to(by_id) == [NOT_APPROVER]
    await assert_pending(served.gate, request)
    actor = "carol" if user == CAROL_LINE else f"line:{user}"
    assert await refusals(served.gate, request) == [(actor, "not an approver")]


async def test_line_an_answer_to_no_question_is_refused(line_app: LineServed) -> None:
    served = line_app
    request = await ask(served.gate)
    event = typed("answer NoSuchQ1: EU")
    assert await served.post(event) == 200
    assert served.replied_to(event) == [
        "No question for you matches NoSuchQ1; tap Reply on the question to answer it."
    ]
    await assert_pending(served.gate, request)


async def test_line_a_typed_answer_never_approves_a_tool_call(line_app: LineServed) -> None:
    served = line_app
    deploy = await ask_deploy(served.gate)
    by_id = typed(f"answer {deploy.id}: yes, go")
    by_prefix = typed(f"answer {deploy.id[:8]}: yes, go")
    reply_button = line_event("postback", postback={"data": postback_data("reply", deploy.id)})
    dismiss = line_event("postback", postback={"data": postback_data("dismiss", deploy.id)})
    assert await served.post(by_id, by_prefix, reply_button, dismiss) == 200
    assert served.replied_to(by_id) == [NOT_QUESTION]
    assert served.replied_to(by_prefix)[0].startswith("No question for you matches")
    assert served.replied_to(reply_button) == [NOT_QUESTION]
    assert served.replied_to(dismiss) == [NOT_QUESTION]
    await assert_pending(served.gate, deploy)
    assert await refusals(served.gate, deploy) == [("alice", "not a question")] * 2


async def test_line_an_answer_to_an_answered_question_is_refused(line_app: LineServed) -> None:
    served = line_app
    request = await ask(served.gate)
    # Bob's message first: once the question is answered, unsent messages are not sent.
    button = tapped(line_actions(await served.pushed(request, BOB_LINE))["Reply"], user=BOB_LINE)
    assert await served.post(typed(f"answer {request.id[:8]}: EU")) == 200
    late = typed(f"answer {request.id[:8]}: US", user=BOB_LINE)
    assert await served.post(late, button) == 200
    already = "Already answered by alice at 00:00 UTC - Deploy window."
    assert served.replied_to(late) == [already]
    assert served.replied_to(button) == [already]
    current = await served.gate.get_request(request.id)
    assert (current.resolved_by, current.resolution_reason) == ("alice", "EU")


async def test_line_an_answer_after_expiry_is_refused(line_app: LineServed) -> None:
    served = line_app
    request = await ask(served.gate)
    served.clock.advance(61)
    event = typed(f"answer {request.id[:8]}: EU")
    assert await served.post(event) == 200
    assert served.replied_to(event) == [
        f"This request expired - Deploy window (request {request.id[:8]})."
    ]
    current = await served.gate.get_request(request.id)
    assert (current.status, current.resolution_reason) == ("expired", None)


@pytest.mark.parametrize(
    ("text", "reply"),
    [
        ("answer {ref}:   ", 'Type your answer after "answer {ref}:".'),
        (
            "answer {ref}: " + "x" * 2001,
            "That answer is longer than 2000 characters; please shorten it and send it again.",
        ),
    ],
)
async def test_line_an_empty_or_oversized_answer_is_refused(
    line_app: LineServed, text: str, reply: str
) -> None:
    served = line_app
    request = await ask(served.gate)
    ref = request.id[:8]
    event = typed(text.format(ref=ref))
    assert await served.post(event) == 200
    assert served.replied_to(event) == [reply.format(ref=ref)]
    await assert_pending(served.gate, request)


async def test_line_an_ambiguous_prefix_is_refused_and_a_longer_one_answers(
    line_app: LineServed,
) -> None:
    served = line_app
    now = served.clock.now()
    twins = [
        make_request(
            now,
            id="Tw1nPref" + suffix,
            tool=CONTACT_TOOL,
            arguments={"message": f"twin {suffix}"},
            approvers=("alice",),
            agent=f"agent-{suffix}",
        )
        for suffix in ("AAAAAAAAAAAAAA", "BBBBBBBBBBBBBB")
    ]
    for twin in twins:
        created = await served.gate.store.create_request(twin, [], now)
        assert created.created
    ambiguous = typed("answer Tw1nPref: EU")
    precise = typed("answer Tw1nPrefB: US")
    assert await served.post(ambiguous, precise) == 200
    assert served.replied_to(ambiguous) == [
        "More than one open question starts with Tw1nPref; tap Reply on the one you mean."
    ]
    assert served.replied_to(precise) == ["Answer sent - question (request Tw1nPref)"]
    first, second = [await served.gate.get_request(t.id) for t in twins]
    assert first.status == "pending"
    assert (second.status, second.resolution_reason) == ("approved", "US")


async def test_line_a_question_behind_many_newer_requests_is_found_by_its_prefix(
    line_app: LineServed,
) -> None:
    """The prefix is matched in SQL, among questions only: no scan window to fall out of."""
    served = line_app
    question = await ask(served.gate)
    now = served.clock.now()
    for n in range(1200):
        newer = make_request(now, tool="deploy", arguments={"n": n}, approvers=("alice",))
        assert (await served.gate.store.create_request(newer, [], now)).created
    wrong_case = typed(f"answer {question.id[:8].swapcase()}: EU")
    answer = typed(f"answer {question.id[:8]}: EU")
    assert await served.post(wrong_case) == 200
    assert served.replied_to(wrong_case)[0].startswith("No question for you matches")
    await assert_pending(served.gate, question)
    assert await served.post(answer) == 200
    current = await served.gate.get_request(question.id)
    assert (current.status, current.resolution_reason) == ("approved", "EU")


async def test_line_reply_button_by_a_non_approver_is_refused_and_audited(
    line_app: LineServed,
) -> None:
    served = line_app
    request = await ask(served.gate)
    data = postback_data("reply", request.id)
    button = line_event("postback", CAROL_LINE, postback={"data": data})
    redelivered = {**button, "deliveryContext": {"isRedelivery": True}}
    assert await served.post(button, redelivered) == 200
    assert served.replied_to(button) == [NOT_APPROVER]  # once: the redelivery is skipped
    await assert_pending(served.gate, request)
    assert await refusals(served.gate, request) == [("carol", "not an approver")]


async def test_line_reply_button_on_an_unknown_request_is_answered(line_app: LineServed) -> None:
    served = line_app
    button = line_event("postback", postback={"data": postback_data("reply", "nosuchrequest")})
    assert await served.post(button) == 200
    assert served.replied_to(button) == ["This request does not exist (any more)."]


async def test_line_dismiss_denies_the_question(line_app: LineServed) -> None:
    served = line_app
    request = await ask(served.gate)
    dismiss = line_actions(await served.pushed(request, BOB_LINE))["Dismiss"]
    event = tapped(dismiss, user=BOB_LINE)
    assert await served.post(event) == 200
    assert served.replied_to(event) == [f"Dismissed - Deploy window (request {request.id[:8]})"]
    decision = (await served.gate.get_request(request.id)).decision()
    assert decision is not None
    assert (decision.status, decision.verdict, decision.decided_by) == ("denied", "deny", "bob")


async def test_line_answers_in_a_group_are_refused(line_app: LineServed) -> None:
    served = line_app
    request = await ask(served.gate)
    event = typed(f"answer {request.id[:8]}: EU", source="group")
    assert await served.post(event) == 200
    [reply] = served.replied_to(event)
    assert "1:1 chat only" in reply
    await assert_pending(served.gate, request)


async def test_line_other_text_keeps_its_behaviour(line_app: LineServed) -> None:
    served = line_app
    request = await ask(served.gate)
    chat = [typed("hello"), typed("answer me: what now?"), typed("EU please")]
    command = typed("id")
    assert await served.post(*chat, command) == 200
    assert [served.replied_to(e) for e in chat] == [[], [], []]
    assert served.replied_to(command) == [
        f"Your LINE user id is {ALICE_LINE}; add it to tapgate.yaml under approvers."
    ]
    await assert_pending(served.gate, request)


async def test_line_an_answer_that_cannot_be_recorded_asks_to_send_it_again(
    line_app: LineServed,
) -> None:
    served = line_app
    broken, fine = await ask(served.gate, "broken?"), await ask(served.gate, "fine?")
    # A row the store can no longer read: looking the question up raises inside the core.
    await served.gate.store.run(
        lambda conn: conn.execute(
            sql("UPDATE requests SET arguments = 'not json' WHERE id = :id"), {"id": broken.id}
        )
    )
    first, second = typed(f"answer {broken.id}: EU"), typed(f"answer {fine.id}: US")
    assert await served.post(first, second) == 200
    assert served.replied_to(first) == [
        "tapgate could not record that just now; please send your answer again."
    ]
    assert served.replied_to(second) == [answer_sent(fine)]


# One app serves every example (pytest-asyncio runs each example of an async
# @given test in the fixture's loop): the question must survive them all.
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(draw=st.data())
async def test_line_no_typed_text_from_a_non_approver_decides_anything(
    line_app: LineServed, draw: st.DataObject
) -> None:
    served = line_app
    pending = await served.gate.store.list_requests(status="pending")
    request = pending[0] if pending else await ask(served.gate)
    reference = draw.draw(
        st.sampled_from([request.id, request.id[:6], request.id[:8], request.id[:12]])
        | st.from_regex(r"[A-Za-z0-9_-]{6,24}", fullmatch=True)
    )
    keyword = draw.draw(st.sampled_from(["answer", "Answer", "ANSWER", " answer"]))
    colon = draw.draw(st.sampled_from([":", "\uff1a", " :"]))
    text = f"{keyword} {reference}{colon}{draw.draw(st.text(max_size=40))}"
    user = draw.draw(st.sampled_from([CAROL_LINE, STRANGER_LINE]))
    source = draw.draw(st.sampled_from(["user", "user", "group"]))
    event = typed(text, user=user, source=source)
    assert await served.post(event) == 200
    assert len(served.replied_to(event)) == 1  # always told something, once
    await assert_pending(served.gate, request)
