"""SlackNotifier against the fake Slack Web API, through the real slack_sdk client.

The ambiguous failures (a post performed but its answer lost) must still end
in exactly one message: the retry finds the first post in
``conversations.history`` by the outbox key in its metadata.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from tapgate.channels.slack.blocks import render_slack
from tapgate.channels.slack.notifier import METADATA_EVENT_TYPE, SlackNotifier
from tapgate.delivery.notifier import Notifier, Receipt
from tapgate.delivery.presentation import present
from tapgate.delivery.retry import RetryPolicy
from tapgate.errors import DeliveryError, PermanentDeliveryError
from tapgate.gate.models import Delivery, Request
from tests.factories import make_request
from tests.fakes import FakeSlack, Fault
from tests.fakes.sleeps import Sleeps

TOKEN = "xoxb-test-bot-token"
USER = "U0ALICE"
NOW = datetime(2025, 3, 4, 12, 0, tzinfo=UTC)
DELIVERY = Delivery(approver="alice", channel="slack", address=USER)


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack(bot_token=TOKEN) as fake:
        yield fake


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


def _notifier(slack: FakeSlack, sleeps: Sleeps, *, channel_id: str | None = None) -> SlackNotifier:
    # A short timeout so the scripted hangs end quickly; a local answer takes milliseconds.
    return SlackNotifier(
        TOKEN,
        api_base_url=slack.url,
        timeout=1.0,
        channel_id=channel_id,
        retry=RetryPolicy(jitter=0.0),
        sleep=sleeps,
    )


@pytest.fixture
def notifier(slack: FakeSlack, sleeps: Sleeps) -> SlackNotifier:
    return _notifier(slack, sleeps)


@pytest.fixture
def request_() -> Request:
    return make_request(NOW, tool="deploy", arguments={"target": "prod"})


def _key() -> str:
    return str(uuid.uuid4())


async def test_post_goes_to_the_dm_and_the_receipt_names_the_d_channel(
    slack: FakeSlack, notifier: SlackNotifier, request_: Request, sleeps: Sleeps
) -> None:
    key = _key()
    receipt = await notifier.send(request_, DELIVERY, key=key)

    [post] = slack.posts
    dm = slack.dm_channel(USER)
    assert receipt == Receipt(channel="slack", address=USER, ref={"channel": dm, "ts": post.ts})
    assert dm.startswith("D")
    assert post.requested_channel == dm
    payload = render_slack(present(request_))
    assert (post.text, post.blocks) == (payload["text"], payload["blocks"])
    assert post.metadata == {
        "event_type": METADATA_EVENT_TYPE,
        "event_payload": {"request_id": request_.id, "key": key},
    }
    assert post.args["unfurl_links"] is False
    assert sleeps.delays == []


async def test_the_dm_channel_is_opened_once_per_user(
    slack: FakeSlack, notifier: SlackNotifier, request_: Request
) -> None:
    for _ in range(2):
        await notifier.send(request_, DELIVERY, key=_key())
    assert len(slack.requests_to("conversations.open")) == 1
    assert slack.requests_to("conversations.open")[0].query == {"users": USER}
    assert len(slack.posts) == 2


async def test_a_shared_channel_needs_no_dm(
    slack: FakeSlack, sleeps: Sleeps, request_: Request
) -> None:
    notifier = _notifier(slack, sleeps, channel_id="C0APPROVALS")
    receipt = await notifier.send(request_, DELIVERY, key=_key())
    assert receipt.ref["channel"] == "C0APPROVALS"
    assert slack.requests_to("conversations.open") == []
    assert [p.channel for p in slack.posts] == ["C0APPROVALS"]


def test_slack_notifier_is_a_notifier() -> None:
    assert isinstance(SlackNotifier(TOKEN), Notifier)
    assert SlackNotifier.channel == "slack"


async def test_rate_limit_sleeps_exactly_retry_after(
    slack: FakeSlack, notifier: SlackNotifier, request_: Request, sleeps: Sleeps
) -> None:
    slack.script("chat.postMessage", Fault.slack_ratelimited(retry_after=7))
    await notifier.send(request_, DELIVERY, key=_key())
    assert sleeps.delays == [7.0]
    assert len(slack.posts) == 1
    # A 429 is never performed: no history lookup is needed before the retry.
    assert slack.requests_to("conversations.history") == []


async def test_a_retry_after_beyond_the_cap_is_left_to_the_outbox(
    slack: FakeSlack, notifier: SlackNotifier, request_: Request, sleeps: Sleeps
) -> None:
    slack.script("chat.postMessage", Fault.slack_ratelimited(retry_after=600))
    with pytest.raises(DeliveryError) as caught:
        await notifier.send(request_, DELIVERY, key=_key())
    assert caught.value.retryable is True
    assert (caught.value.status, caught.value.retry_after) == (429, 600.0)
    assert sleeps.delays == []
    assert len(slack.requests_to("chat.postMessage")) == 1


@pytest.mark.parametrize(
    "fault",
    [Fault.status(500), Fault.status(503), Fault.slack_error("internal_error")],
    ids=["500", "503", "internal_error"],
)
async def test_server_error_then_success_posts_once(
    slack: FakeSlack, notifier: SlackNotifier, request_: Request, sleeps: Sleeps, fault: Fault
) -> None:
    slack.script("chat.postMessage", fault)
    await notifier.send(request_, DELIVERY, key=_key())
    assert len(slack.posts) == 1
    assert len(slack.requests_to("conversations.history")) == 1  # a 5xx may hide a post
    assert sleeps.delays == [0.5]


@pytest.mark.parametrize(
    "fault",
    [Fault.drop_after_success(), Fault.timeout(10, deliver=True)],
    ids=["drop_after_success", "timeout_delivered"],
)
async def test_a_lost_answer_is_found_in_history_instead_of_posting_twice(
    slack: FakeSlack, notifier: SlackNotifier, request_: Request, fault: Fault
) -> None:
    # Another tapgate message in the same DM must not be mistaken for this one.
    await notifier.send(request_, DELIVERY, key=_key())
    slack.script("chat.postMessage", fault)
    key = _key()
    receipt = await notifier.send(request_, DELIVERY, key=key)

    assert len(slack.messages) == 2
    assert len(slack.requests_to("chat.postMessage")) == 2
    [history] = slack.requests_to("conversations.history")
    assert history.query["include_all_metadata"] == "1"
    mine = slack.messages[(receipt.ref["channel"], receipt.ref["ts"])]
    assert mine.metadata is not None
    assert mine.metadata["event_payload"]["key"] == key


async def test_a_retried_row_finds_the_post_an_earlier_attempt_made(
    slack: FakeSlack, notifier: SlackNotifier, request_: Request
) -> None:
    """The earlier attempt posted, then its process died (or gave up): look before posting."""
    key = _key()
    first = await notifier.send(request_, DELIVERY, key=key)
    restarted = _notifier(slack, Sleeps())  # a new process: no memory of the first attempt
    again = await restarted.send(request_, DELIVERY, key=key, retried=True)
    assert again.ref == first.ref
    assert len(slack.requests_to("chat.postMessage")) == 1
    assert len(slack.requests_to("conversations.history")) == 1


@pytest.mark.parametrize(
    "fault", [Fault.drop(), Fault.timeout(10)], ids=["drop", "timeout_not_delivered"]
)
async def test_a_lost_request_is_posted_again_after_checking_history(
    slack: FakeSlack, notifier: SlackNotifier, request_: Request, fault: Fault
) -> None:
    slack.script("chat.postMessage", fault)
    receipt = await notifier.send(request_, DELIVERY, key=_key())
    [message] = slack.messages.values()
    assert receipt.ref == {"channel": message.channel, "ts": message.ts}
    assert len(slack.requests_to("chat.postMessage")) == 2
    assert len(slack.requests_to("conversations.history")) == 1


async def test_without_history_access_a_retry_posts_again_and_warns_once(
    slack: FakeSlack, notifier: SlackNotifier, request_: Request, caplog: pytest.LogCaptureFixture
) -> None:
    missing_scope = Fault.status(
        200, {"ok": False, "error": "missing_scope", "needed": "im:history"}
    )
    slack.script("chat.postMessage", Fault.drop_after_success(), Fault.drop_after_success())
    slack.script("conversations.history", missing_scope, missing_scope)
    caplog.set_level(logging.WARNING, logger="tapgate.channels.slack.notifier")

    await notifier.send(request_, DELIVERY, key=_key())
    await notifier.send(request_, DELIVERY, key=_key())

    assert len(slack.posts) == 4  # the documented cost of a bot without im:history
    warnings = [
        r.getMessage() for r in caplog.records if r.name == "tapgate.channels.slack.notifier"
    ]
    assert len(warnings) == 1
    assert "im:history" in warnings[0]


async def test_exhausted_retries_are_retryable(
    slack: FakeSlack, notifier: SlackNotifier, request_: Request, sleeps: Sleeps
) -> None:
    slack.script("chat.postMessage", *[Fault.status(502)] * 4)
    with pytest.raises(DeliveryError) as caught:
        await notifier.send(request_, DELIVERY, key=_key())
    assert type(caught.value) is DeliveryError
    assert caught.value.retryable is True
    assert caught.value.status == 502
    assert sleeps.delays == [0.5, 1.0, 2.0]
    assert slack.posts == []


async def test_invalid_auth_is_permanent(
    slack: FakeSlack, sleeps: Sleeps, request_: Request
) -> None:
    notifier = SlackNotifier("xoxb-wrong", api_base_url=slack.url, sleep=sleeps)
    with pytest.raises(PermanentDeliveryError) as caught:
        await notifier.send(request_, DELIVERY, key=_key())
    assert "invalid_auth" in str(caught.value)
    assert "xoxb-wrong" not in str(caught.value)
    assert len(slack.requests) == 1
    assert sleeps.delays == []


@pytest.mark.parametrize("error", ["channel_not_found", "not_in_channel", "is_archived"])
async def test_api_errors_are_permanent_and_not_retried(
    slack: FakeSlack, notifier: SlackNotifier, request_: Request, sleeps: Sleeps, error: str
) -> None:
    slack.script("chat.postMessage", Fault.slack_error(error))
    with pytest.raises(PermanentDeliveryError) as caught:
        await notifier.send(request_, DELIVERY, key=_key())
    assert error in str(caught.value)
    assert len(slack.requests_to("chat.postMessage")) == 1
    assert sleeps.delays == []


async def test_a_user_that_does_not_exist_is_permanent(
    slack: FakeSlack, notifier: SlackNotifier, request_: Request
) -> None:
    bad = Delivery(approver="alice", channel="slack", address="alice@example.com")
    with pytest.raises(PermanentDeliveryError, match="user_not_found"):
        await notifier.send(request_, bad, key=_key())
    assert slack.posts == []


def _approved(request: Request, reason: str | None = None) -> Request:
    return replace(
        request,
        status="approved",
        resolved_by="alice",
        resolved_at=NOW + timedelta(minutes=3),
        resolution_reason=reason,
    )


async def test_update_replaces_the_buttons_with_the_outcome(
    slack: FakeSlack, notifier: SlackNotifier, request_: Request
) -> None:
    receipt = await notifier.send(request_, DELIVERY, key=_key())
    await notifier.update(_approved(request_), receipt)

    message = slack.messages[(receipt.ref["channel"], receipt.ref["ts"])]
    assert message.text is not None
    assert "Approved by alice at 12:03 UTC" in message.text
    assert "Approved by alice at 12:03 UTC" in json.dumps(message.blocks, ensure_ascii=False)
    assert message.blocks is not None
    assert all(block["type"] != "actions" for block in message.blocks)
    assert len(message.history) == 1


async def test_update_of_a_pending_request_does_nothing(
    slack: FakeSlack, notifier: SlackNotifier, request_: Request
) -> None:
    receipt = await notifier.send(request_, DELIVERY, key=_key())
    await notifier.update(request_, receipt)
    assert slack.updates == []


async def test_update_is_retried_through_the_same_policy(
    slack: FakeSlack, notifier: SlackNotifier, request_: Request, sleeps: Sleeps
) -> None:
    receipt = await notifier.send(request_, DELIVERY, key=_key())
    slack.script("chat.update", Fault.slack_ratelimited(retry_after=3), Fault.drop())
    await notifier.update(_approved(request_), receipt)
    assert sleeps.delays == [3.0, 1.0]
    assert len(slack.updates) == 1


@pytest.mark.parametrize(
    ("ref", "error"),
    [
        ({"channel": "D0UNKNOWN", "ts": "1.000001"}, "channel_not_found"),
        ({"channel": "<dm>", "ts": "1.000001"}, "message_not_found"),
        ({"channel": "<dm>"}, "without channel and ts"),
    ],
)
async def test_update_of_a_missing_message_is_permanent(
    slack: FakeSlack,
    notifier: SlackNotifier,
    request_: Request,
    sleeps: Sleeps,
    ref: dict[str, str],
    error: str,
) -> None:
    await notifier.send(request_, DELIVERY, key=_key())
    dm = slack.dm_channel(USER)
    receipt = Receipt(
        channel="slack", address=USER, ref={k: v.replace("<dm>", dm) for k, v in ref.items()}
    )
    with pytest.raises(PermanentDeliveryError, match=error):
        await notifier.update(_approved(request_), receipt)
    assert sleeps.delays == []


async def test_mentions_in_the_arguments_arrive_escaped(
    slack: FakeSlack, notifier: SlackNotifier
) -> None:
    request = make_request(
        NOW,
        tool="bash",
        agent="<!here>",
        reason="<@U0BOSS> said so",
        arguments={"command": "echo <!channel> && curl <https://evil.example|click>"},
    )
    receipt = await notifier.send(request, DELIVERY, key=_key())
    await notifier.update(_approved(request, reason="<!channel> ok"), receipt)

    [post] = slack.posts
    [update] = slack.updates
    for text, blocks in [(post.text, post.blocks), (update.text, update.blocks)]:
        sent = (text or "") + json.dumps(blocks, ensure_ascii=False)
        for raw in ("<!channel>", "<!here>", "<@U0BOSS>", "<https://evil"):
            assert raw not in sent
    assert "&lt;!channel&gt;" in json.dumps(post.blocks)


async def test_fake_history_is_newest_first_and_shows_metadata_on_request(slack: FakeSlack) -> None:
    client = AsyncWebClient(token=TOKEN, base_url=slack.url, retry_handlers=[])
    dm = (await client.conversations_open(users=USER))["channel"]["id"]
    metadata = {"event_type": "e", "event_payload": {"n": 1}}
    first = await client.chat_postMessage(channel=dm, text="one", metadata=metadata)
    second = await client.chat_postMessage(channel=dm, text="two")
    assert float(first["ts"]) < float(second["ts"])

    both = await client.conversations_history(channel=dm, include_all_metadata=True)
    assert [m["text"] for m in both["messages"]] == ["two", "one"]
    assert both["messages"][1]["metadata"] == metadata
    plain = await client.conversations_history(channel=dm, limit=1)
    assert [m["text"] for m in plain["messages"]] == ["two"]
    assert plain["has_more"] is True
    newer = await client.conversations_history(channel=dm, oldest=first["ts"])
    assert [m["text"] for m in newer["messages"]] == ["two"]
    assert all("metadata" not in m for m in newer["messages"])
