"""The fake LINE and Slack APIs, exercised through the real SDK clients.

These tests double as a record of what the SDKs really send and how each
failure surfaces to tapgate (exception type, status, headers, body).
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from linebot.v3.messaging import (
    AsyncApiClient,
    AsyncMessagingApi,
    Configuration,
    PushMessageRequest,
    ReplyMessageRequest,
    TextMessage,
)
from linebot.v3.messaging.exceptions import ApiException
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
from slack_sdk.web.async_client import AsyncWebClient

from tests.fakes import FakeLine, FakeServer, FakeSlack, Fault
from tests.fakes._faults import FaultScript

LINE_TOKEN = "line-test-channel-access-token"
SLACK_TOKEN = "xoxb-test-bot-token"
USER = "U1234567890abcdef1234567890abcdef"
TIMEOUT = 2.0


# fixtures


@pytest.fixture
async def line() -> AsyncIterator[FakeLine]:
    async with FakeLine(access_token=LINE_TOKEN) as fake:
        yield fake


@pytest.fixture
async def line_api(line: FakeLine) -> AsyncIterator[AsyncMessagingApi]:
    # AsyncApiClient opens an aiohttp session: create it inside the test's loop.
    config = Configuration(host=line.url, access_token=LINE_TOKEN)
    async with AsyncApiClient(config) as client:
        yield AsyncMessagingApi(client)


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack(bot_token=SLACK_TOKEN) as fake:
        yield fake


@pytest.fixture
def slack_client(slack: FakeSlack) -> AsyncWebClient:
    # No session given: slack_sdk opens and closes one per call.
    return AsyncWebClient(token=SLACK_TOKEN, base_url=slack.url)


def _push(text: str = "Approve deploy?") -> PushMessageRequest:
    return PushMessageRequest(to=USER, messages=[TextMessage(text=text)])


def _key() -> str:
    return str(uuid.uuid4())


def _body(error: ApiException) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(error.body)
    return loaded


# the fault script


def test_fault_script_is_fifo_per_endpoint_and_rejects_unknown_names() -> None:
    script = FaultScript(["push", "reply"])
    script.add("push", [Fault.status(500), Fault.drop()])
    assert script.pending("reply") == ()
    assert script.pop("push") == Fault.status(500)
    assert script.pop("reply") is None
    assert script.pop("push") == Fault.drop()
    assert script.pop("push") is None
    with pytest.raises(ValueError, match="unknown endpoint 'pushh'"):
        script.add("pushh", [Fault.drop()])


# LINE


async def test_line_push_delivers_and_records_what_the_sdk_sends(
    line: FakeLine, line_api: AsyncMessagingApi
) -> None:
    key = _key()
    response = await line_api.push_message(_push(), x_line_retry_key=key, _request_timeout=TIMEOUT)

    [sent] = response.sent_messages
    assert sent.id.isdigit()
    assert sent.quote_token
    [push] = line.pushes
    assert (push.to, push.retry_key) == (USER, key)
    assert push.messages == [{"type": "text", "text": "Approve deploy?"}]
    [request] = line.requests
    assert request.endpoint == "push"
    assert request.headers["authorization"] == f"Bearer {LINE_TOKEN}"
    assert request.headers["x-line-retry-key"] == key
    assert request.headers["content-type"] == "application/json"
    assert request.headers["user-agent"].startswith("line-bot-sdk-python/")
    assert request.body == {
        "to": USER,
        "messages": [{"type": "text", "text": "Approve deploy?"}],
        "notificationDisabled": False,
    }
    assert line.pushed_to(USER) == push.messages


async def test_line_reused_retry_key_is_409_and_not_delivered_twice(
    line: FakeLine, line_api: AsyncMessagingApi
) -> None:
    key = _key()
    first = await line_api.push_message(_push(), x_line_retry_key=key, _request_timeout=TIMEOUT)
    assert [m.id for m in line.pushes[0].sent_messages] == [first.sent_messages[0].id]

    with pytest.raises(ApiException) as caught:
        await line_api.push_message(_push(), x_line_retry_key=key, _request_timeout=TIMEOUT)

    error = caught.value
    assert error.status == 409
    assert _body(error) == {
        "message": "The retry key is already accepted",
        "sentMessages": [m.to_json() for m in line.pushes[0].sent_messages],
    }
    assert error.headers["X-Line-Accepted-Request-Id"] == line.pushes[0].request_id
    assert len(line.pushes) == 1


async def test_line_retry_key_must_be_a_uuid(line: FakeLine, line_api: AsyncMessagingApi) -> None:
    with pytest.raises(ApiException) as caught:
        await line_api.push_message(
            _push(), x_line_retry_key="not-a-uuid", _request_timeout=TIMEOUT
        )
    assert caught.value.status == 400
    assert line.pushes == []


async def test_line_wrong_token_is_401(line: FakeLine) -> None:
    config = Configuration(host=line.url, access_token="wrong")
    async with AsyncApiClient(config) as client:
        with pytest.raises(ApiException) as caught:
            await AsyncMessagingApi(client).push_message(_push(), _request_timeout=TIMEOUT)
    assert caught.value.status == 401
    assert _body(caught.value)["message"].startswith("Authentication failed")
    assert line.pushes == []


async def test_line_scripted_500_then_success(line: FakeLine, line_api: AsyncMessagingApi) -> None:
    line.script("push", Fault.status(500))
    key = _key()
    with pytest.raises(ApiException) as caught:
        await line_api.push_message(_push(), x_line_retry_key=key, _request_timeout=TIMEOUT)
    assert caught.value.status == 500

    # A failed attempt does not consume the retry key: the retry is delivered.
    await line_api.push_message(_push(), x_line_retry_key=key, _request_timeout=TIMEOUT)
    assert len(line.pushes) == 1
    assert [r.fault for r in line.requests] == [Fault.status(500), None]


@pytest.mark.parametrize(
    ("fault", "message"),
    [
        (Fault.line_monthly_limit(), "You have reached your monthly limit."),
        (Fault.line_rate_limited(), "Too Many Requests"),
        (Fault.status(429), "Too Many Requests"),
    ],
)
async def test_line_429_bodies_tell_quota_from_rate_limit(
    line: FakeLine, line_api: AsyncMessagingApi, fault: Fault, message: str
) -> None:
    line.script("push", fault)
    with pytest.raises(ApiException) as caught:
        await line_api.push_message(_push(), _request_timeout=TIMEOUT)
    assert caught.value.status == 429
    assert _body(caught.value) == {"message": message}
    assert "Retry-After" not in caught.value.headers
    assert line.pushes == []


async def test_line_timeout_raises_timeout_error_and_is_not_delivered(
    line: FakeLine, line_api: AsyncMessagingApi
) -> None:
    line.script("push", Fault.timeout(30))
    with pytest.raises(TimeoutError):
        await line_api.push_message(_push(), _request_timeout=0.2)
    assert line.pushes == []
    await line_api.push_message(_push(), _request_timeout=TIMEOUT)
    assert len(line.pushes) == 1


@pytest.mark.parametrize(
    ("fault", "error"),
    [
        (Fault.timeout(30, deliver=True), TimeoutError),
        (Fault.drop_after_success(), aiohttp.ServerDisconnectedError),
    ],
)
async def test_line_ambiguous_failure_then_retry_with_same_key_is_409(
    line: FakeLine, line_api: AsyncMessagingApi, fault: Fault, error: type[Exception]
) -> None:
    line.script("push", fault)
    key = _key()
    with pytest.raises(error):
        await line_api.push_message(_push(), x_line_retry_key=key, _request_timeout=0.3)
    assert len(line.pushes) == 1  # delivered although the client saw a failure

    with pytest.raises(ApiException) as caught:
        await line_api.push_message(_push(), x_line_retry_key=key, _request_timeout=TIMEOUT)
    assert caught.value.status == 409
    assert len(line.pushes) == 1


async def test_line_drop_is_a_connection_error_and_not_delivered(
    line: FakeLine, line_api: AsyncMessagingApi
) -> None:
    line.script("push", Fault.drop())
    with pytest.raises(aiohttp.ClientConnectionError):
        await line_api.push_message(_push(), _request_timeout=TIMEOUT)
    assert line.pushes == []
    await line_api.push_message(_push(), _request_timeout=TIMEOUT)
    assert len(line.pushes) == 1


async def test_line_reply_token_is_single_use(line: FakeLine, line_api: AsyncMessagingApi) -> None:
    request = ReplyMessageRequest(replyToken="rt-1", messages=[TextMessage(text="Approved")])
    await line_api.reply_message(request, _request_timeout=TIMEOUT)
    with pytest.raises(ApiException) as caught:
        await line_api.reply_message(request, _request_timeout=TIMEOUT)
    assert caught.value.status == 400
    assert _body(caught.value) == {"message": "Invalid reply token"}
    [reply] = line.replies
    assert reply.reply_token == "rt-1"
    assert reply.messages == [{"type": "text", "text": "Approved"}]


_TEMPLATE = "messages[0].template"


def _buttons(text: str, *, title: str | None = None, data: str = "a=1") -> dict[str, Any]:
    template: dict[str, Any] = {
        "type": "buttons",
        "text": text,
        "actions": [{"type": "postback", "label": "Approve", "data": data}],
    }
    if title is not None:
        template["title"] = title
    return {"type": "template", "altText": "Approval needed", "template": template}


@pytest.mark.parametrize(
    ("body", "prop"),
    [
        ({"messages": [{"type": "text", "text": "x"}]}, "to"),
        ({"to": USER, "messages": []}, "messages"),
        ({"to": USER, "messages": [{"type": "text", "text": "x"}] * 6}, "messages"),
        ({"to": USER, "messages": [{"type": "text", "text": ""}]}, "messages[0].text"),
        (
            {"to": USER, "messages": [_buttons("x" * 61, title="Deploy")]},
            "messages[0].template.text",
        ),
        (
            {"to": USER, "messages": [_buttons("ok", data="d" * 301)]},
            "messages[0].template.actions[0].data",
        ),
    ],
)
async def test_line_rejects_bodies_the_real_api_rejects(
    line: FakeLine, body: dict[str, Any], prop: str
) -> None:
    # Raw HTTP: the SDK's own pydantic models already refuse 0 or 6 messages.
    headers = {"Authorization": f"Bearer {LINE_TOKEN}"}
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{line.url}/v2/bot/message/push", json=body, headers=headers) as r,
    ):
        assert r.status == 400
        answer = await r.json()
    assert answer["message"] == "The request body has 1 error(s)"
    assert [d["property"] for d in answer["details"]] == [prop]
    assert line.pushes == []


async def test_line_accepts_a_buttons_template_within_limits(line: FakeLine) -> None:
    body = {"to": USER, "messages": [_buttons("x" * 160), _buttons("y" * 60, title="Deploy")]}
    headers = {"Authorization": f"Bearer {LINE_TOKEN}"}
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{line.url}/v2/bot/message/push", json=body, headers=headers) as r,
    ):
        assert r.status == 200
        assert len((await r.json())["sentMessages"]) == 2


async def test_line_unknown_path_is_recorded_as_404(line: FakeLine) -> None:
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"{line.url}/v2/bot/message/quota") as r,
    ):
        assert r.status == 404
    assert [r.endpoint for r in line.requests] == ["unknown"]


# Slack


async def test_slack_auth_test_is_sent_as_an_empty_form_post(
    slack: FakeSlack, slack_client: AsyncWebClient
) -> None:
    response = await slack_client.auth_test()
    assert response["ok"] is True
    assert response["user_id"].startswith("U")
    assert response["bot_id"].startswith("B")
    [request] = slack.requests
    assert (request.method, request.path) == ("POST", "/api/auth.test")
    assert request.headers["content-type"] == "application/x-www-form-urlencoded"
    assert request.headers["authorization"] == f"Bearer {SLACK_TOKEN}"
    assert request.body_kind == "empty"


async def test_slack_conversations_open_returns_a_stable_dm_id(
    slack: FakeSlack, slack_client: AsyncWebClient
) -> None:
    first = await slack_client.conversations_open(users="U123")
    again = await slack_client.conversations_open(users="U123")
    other = await slack_client.conversations_open(users="U456")

    channel = first["channel"]["id"]
    assert channel.startswith("D")
    assert channel == again["channel"]["id"] == slack.dm_channel("U123")
    assert channel not in {"D123", other["channel"]["id"]}
    # slack_sdk sends conversations.open arguments in the query string.
    assert slack.requests[0].query == {"users": "U123"}
    assert slack.requests[0].body_kind == "empty"


async def test_slack_post_to_user_id_answers_the_dm_channel_and_update_needs_it(
    slack: FakeSlack, slack_client: AsyncWebClient
) -> None:
    blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": "*Deploy?*"}}]
    posted = await slack_client.chat_postMessage(channel="U123", text="Deploy?", blocks=blocks)

    channel, ts = posted["channel"], posted["ts"]
    assert channel == slack.dm_channel("U123")
    assert re.fullmatch(r"\d{10}\.\d{6}", ts)
    assert posted["message"]["blocks"] == blocks
    assert slack.requests[-1].headers["content-type"] == "application/json;charset=utf-8"
    assert slack.posts[0].requested_channel == "U123"

    for bad_channel, ts_arg, error in [
        ("U123", ts, "channel_not_found"),
        (channel, "1.2", "message_not_found"),
    ]:
        with pytest.raises(SlackApiError) as caught:
            await slack_client.chat_update(channel=bad_channel, ts=ts_arg, text="Approved")
        assert caught.value.response["error"] == error

    await slack_client.chat_update(channel=channel, ts=ts, text="Approved by U9", blocks=[])
    message = slack.messages[(channel, ts)]
    assert (message.text, message.blocks) == ("Approved by U9", [])
    assert [(v.text, v.blocks) for v in message.history] == [("Deploy?", blocks)]
    assert [(u.channel, u.ts) for u in slack.updates] == [(channel, ts)]


async def test_slack_ts_is_unique_and_post_times_are_per_channel(
    slack: FakeSlack, slack_client: AsyncWebClient
) -> None:
    timestamps = []
    for channel in ["U1", "U1", "C1"]:
        timestamps.append((await slack_client.chat_postMessage(channel=channel, text="x"))["ts"])
    assert timestamps == sorted(set(timestamps), key=float)
    assert len(slack.post_times("U1")) == 2
    assert slack.post_times("U1") == slack.post_times(slack.dm_channel("U1"))
    assert len(slack.post_times("C1")) == 1
    assert slack.post_times("C2") == []


async def test_slack_bad_or_missing_token_is_200_ok_false(slack: FakeSlack) -> None:
    for token, error in [("xoxb-wrong", "invalid_auth"), (None, "not_authed")]:
        client = AsyncWebClient(token=token, base_url=slack.url)
        with pytest.raises(SlackApiError) as caught:
            await client.chat_postMessage(channel="C1", text="x")
        assert caught.value.response.status_code == 200
        assert caught.value.response["error"] == error
    assert slack.posts == []


async def test_slack_429_surfaces_retry_after_by_default(
    slack: FakeSlack, slack_client: AsyncWebClient
) -> None:
    slack.script("chat.postMessage", Fault.slack_ratelimited(retry_after=7))
    with pytest.raises(SlackApiError) as caught:
        await slack_client.chat_postMessage(channel="C1", text="x")
    response = caught.value.response
    assert response.status_code == 429
    assert response.headers["Retry-After"] == "7"
    assert response["error"] == "ratelimited"
    assert slack.posts == []
    await slack_client.chat_postMessage(channel="C1", text="x")
    assert len(slack.posts) == 1


async def test_slack_rate_limit_handler_retries_transparently_when_configured(
    slack: FakeSlack,
) -> None:
    # Retry-After: 0 keeps the handler's sleep under a second (it adds random()).
    handler = AsyncRateLimitErrorRetryHandler(max_retry_count=1)
    client = AsyncWebClient(token=SLACK_TOKEN, base_url=slack.url, retry_handlers=[handler])
    slack.script("chat.postMessage", Fault.slack_ratelimited(retry_after=0))
    await client.chat_postMessage(channel="C1", text="x")
    assert len(slack.requests_to("chat.postMessage")) == 2
    assert len(slack.posts) == 1


async def test_slack_drop_after_success_posts_although_the_client_fails(slack: FakeSlack) -> None:
    client = AsyncWebClient(token=SLACK_TOKEN, base_url=slack.url, retry_handlers=[])
    slack.script("chat.postMessage", Fault.drop_after_success())
    with pytest.raises(aiohttp.ServerDisconnectedError):
        await client.chat_postMessage(channel="U123", text="Deploy?")
    [post] = slack.posts
    assert (post.channel, post.ts) in slack.messages


async def test_slack_default_client_retries_a_drop_once_so_it_can_double_post(
    slack: FakeSlack, slack_client: AsyncWebClient
) -> None:
    # AsyncWebClient's default retry handlers retry connection errors once
    # (after ~0.5-1.5 s): harmless after a plain drop, a duplicate here.
    slack.script("chat.postMessage", Fault.drop_after_success())
    await slack_client.chat_postMessage(channel="C1", text="Deploy?")
    assert [p.text for p in slack.posts] == ["Deploy?", "Deploy?"]
    assert len(slack.requests_to("chat.postMessage")) == 2


async def test_slack_refuses_blocks_past_fifty_or_past_its_text_cap(
    slack: FakeSlack, slack_client: AsyncWebClient
) -> None:
    """As Slack does: ``invalid_blocks`` past 50 blocks, ``msg_blocks_too_long`` past
    ~11,300 characters of text across them (undocumented; slackapi/bolt-js#2867)."""
    section = {"type": "section", "text": {"type": "mrkdwn", "text": "x" * 2900}}
    refused = [([section] * 4, "msg_blocks_too_long"), ([section] * 51, "invalid_blocks")]
    for blocks, error in refused:
        with pytest.raises(SlackApiError) as caught:
            await slack_client.chat_postMessage(channel="C1", text="x", blocks=blocks)
        assert caught.value.response["error"] == error
    assert slack.posts == []
    await slack_client.chat_postMessage(channel="C1", text="x", blocks=[section] * 3)
    assert len(slack.posts) == 1


async def test_slack_accepts_form_encoded_arguments(slack: FakeSlack) -> None:
    blocks = [{"type": "section", "text": {"type": "plain_text", "text": "hi"}}]
    form = {"token": SLACK_TOKEN, "channel": "C1", "text": "hi", "blocks": json.dumps(blocks)}
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{slack.url}chat.postMessage", data=form) as r,
    ):
        answer = await r.json()
    assert answer["ok"] is True
    assert slack.posts[0].blocks == blocks
    assert slack.requests[0].body_kind == "form"


async def test_slack_ephemeral_and_views_open(
    slack: FakeSlack, slack_client: AsyncWebClient
) -> None:
    dm = (await slack_client.conversations_open(users="U123"))["channel"]["id"]
    await slack_client.chat_postEphemeral(channel=dm, user="U123", text="Only you")
    view = {"type": "modal", "title": {"type": "plain_text", "text": "Deny"}, "blocks": []}
    opened = await slack_client.views_open(trigger_id="trig-1", view=view)
    assert opened["view"]["id"].startswith("V")
    with pytest.raises(SlackApiError) as caught:
        await slack_client.views_open(trigger_id="trig-1", view=view)
    assert caught.value.response["error"] == "exchanged_trigger_id"
    assert [(e.channel, e.user, e.text) for e in slack.ephemerals] == [(dm, "U123", "Only you")]
    assert [v.view for v in slack.views] == [view]


async def test_slack_sdk_warns_when_blocks_come_without_text(
    slack_client: AsyncWebClient,
) -> None:
    # With filterwarnings=error this UserWarning fails a test: always send text.
    with pytest.warns(UserWarning, match="top-level `text` argument is missing"):
        await slack_client.chat_postMessage(
            channel="C1", blocks=[{"type": "section", "text": {"type": "mrkdwn", "text": "x"}}]
        )


# every fault, on both fakes, through plain aiohttp


async def _call(fake: FakeServer, session: aiohttp.ClientSession) -> int:
    if isinstance(fake, FakeLine):
        url, headers = f"{fake.url}/v2/bot/message/push", {"Authorization": f"Bearer {LINE_TOKEN}"}
        body: dict[str, Any] = {"to": USER, "messages": [{"type": "text", "text": "x"}]}
    else:
        url, headers = f"{fake.url}chat.postMessage", {"Authorization": f"Bearer {SLACK_TOKEN}"}
        body = {"channel": "C1", "text": "x"}
    async with session.post(url, json=body, headers=headers) as response:
        await response.read()
        return response.status


def _delivered(fake: FakeServer) -> int:
    if isinstance(fake, FakeLine):
        return len(fake.pushes)
    assert isinstance(fake, FakeSlack)
    return len(fake.posts)


@pytest.mark.parametrize("platform", ["line", "slack"])
@pytest.mark.parametrize(
    ("fault", "delivered"),
    [
        (Fault.status(503), 0),
        (Fault.timeout(30), 0),
        (Fault.timeout(30, deliver=True), 1),
        (Fault.drop(), 0),
        (Fault.drop_after_success(), 1),
    ],
)
async def test_each_fault_applies_once_then_normal_behaviour_resumes(
    platform: str, fault: Fault, delivered: int
) -> None:
    fake: FakeServer = FakeLine(access_token=LINE_TOKEN) if platform == "line" else FakeSlack()
    endpoint = "push" if platform == "line" else "chat.postMessage"
    timeout = aiohttp.ClientTimeout(total=0.3)
    async with fake, aiohttp.ClientSession(timeout=timeout) as session:
        fake.script(endpoint, fault)
        if fault.kind == "status":
            assert await _call(fake, session) == 503
        else:
            with pytest.raises((aiohttp.ClientError, TimeoutError)):
                await _call(fake, session)
        assert _delivered(fake) == delivered
        assert fake.pending_faults(endpoint) == ()
        assert await _call(fake, session) == 200
        assert _delivered(fake) == delivered + 1
        assert [r.fault for r in fake.requests] == [fault, None]


async def test_close_releases_a_hung_request_quickly() -> None:
    fake = await FakeSlack().start()
    fake.script("auth.test", Fault.timeout(60))
    client = AsyncWebClient(token=SLACK_TOKEN, base_url=fake.url, retry_handlers=[])
    started = time.monotonic()
    async with asyncio.timeout(5):
        call = asyncio.create_task(client.auth_test())
        await asyncio.sleep(0.2)  # let the request reach the fake and hang
        assert fake.requests
        await fake.close()
        with pytest.raises(aiohttp.ClientError):
            await call
    assert time.monotonic() - started < 2
