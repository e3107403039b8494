"""The Discord notifier and REST client against the fake Discord: buckets, 429s, refusals, nonces.

Sleeps are recorded instead of slept (the wait is what is checked); the
fake's buckets run on the real clock with short windows.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import UTC, datetime

import pytest
from pydantic import SecretStr

from tapgate.channels.discord.notifier import DiscordNotifier
from tapgate.channels.discord.ratelimit import RateLimits, RouteKey
from tapgate.channels.discord.rest import DiscordApiError, DiscordRest
from tapgate.delivery.retry import RetryPolicy
from tapgate.errors import PermanentDeliveryError
from tapgate.gate.models import Delivery, Request
from tests.factories import make_request
from tests.fakes import Fault
from tests.fakes.discord_api import BOT_TOKEN, FakeDiscord

ALICE = "100000000000000001"


class Sleeps:
    """An injected sleep that records each wait and moves its own clock instead of waiting."""

    def __init__(self) -> None:
        self.waits: list[float] = []
        self.now = 1000.0

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds

    def clock(self) -> float:
        return self.now


@pytest.fixture
async def discord() -> AsyncIterator[FakeDiscord]:
    async with FakeDiscord() as fake:
        yield fake


def notifier(fake: FakeDiscord, sleeps: Sleeps, *, token: str = BOT_TOKEN) -> DiscordNotifier:
    rest = DiscordRest(bot_token=token, api_base_url=fake.url, timeout=5)
    policy = RetryPolicy(attempts=4, base_delay=0.01, max_delay=0.02, jitter=0)
    return DiscordNotifier(rest, retry=policy, sleep=sleeps)


def request() -> Request:
    return make_request(datetime.now(UTC), tool="deploy", arguments={"env": "prod"})


def delivery() -> Delivery:
    return Delivery(channel="discord", address=ALICE, approver="alice")


async def test_a_card_is_posted_to_the_dm_and_edited_once_decided(discord: FakeDiscord) -> None:
    sent = notifier(discord, Sleeps())
    try:
        asked = request()
        receipt = await sent.send(asked, delivery(), key="row-1")
        card = discord.messages[receipt.ref["message_id"]]
        assert card.channel_id == discord.dm_of(ALICE) == receipt.ref["channel_id"]
        await sent.send(request(), delivery(), key="row-2")
        assert len(discord.requests_to("open_dm")) == 1  # the DM channel is opened once
        decided = replace(
            asked, status="approved", resolved_by="alice", resolved_at=asked.created_at
        )
        await sent.update(decided, receipt)
        assert "Approved by alice" in card.text and card.body["components"] == []
    finally:
        await sent.close()


async def test_a_retried_post_returns_the_first_message_instead_of_posting_twice(
    discord: FakeDiscord,
) -> None:
    sent = notifier(discord, Sleeps())
    try:
        # The post is performed, then the connection drops: the retry carries the same nonce.
        await sent.send(request(), delivery(), key="warm-up")  # opens the DM
        discord.script("create", Fault.drop_after_success())
        receipt = await sent.send(request(), delivery(), key="row-7")
        assert len(discord.messages) == 2
        assert receipt.ref["message_id"] in discord.messages
    finally:
        await sent.close()


async def test_a_429_waits_its_float_retry_after_then_posts(discord: FakeDiscord) -> None:
    sleeps = Sleeps()
    sent = notifier(discord, sleeps)
    try:
        limited = {"message": "You are being rate limited.", "retry_after": 0.347, "global": False}
        discord.script("create", Fault.status(429, limited))
        await sent.send(request(), delivery(), key="row-1")
        assert 0.347 in sleeps.waits  # the body's float, not the header's whole second
        assert len(discord.messages) == 1
    finally:
        await sent.close()


async def test_a_global_429_pauses_every_route_of_the_bot(discord: FakeDiscord) -> None:
    sleeps = Sleeps()
    limits = RateLimits(sleep=sleeps, clock=sleeps.clock)
    rest = DiscordRest(
        bot_token=BOT_TOKEN, api_base_url=discord.url, timeout=5, limits=limits, clock=sleeps.clock
    )
    try:
        body = {"message": "You are being rate limited.", "retry_after": 2.5, "global": True}
        discord.script("me", Fault.status(429, body))
        with pytest.raises(DiscordApiError) as raised:
            await rest.call("GET", "/users/@me")
        assert raised.value.is_global and raised.value.retry_after == 2.5
        # Another route entirely: it waits out the global pause before asking.
        await rest.call("POST", "/users/@me/channels", body={"recipient_id": ALICE})
        assert sleeps.waits and 2.0 < sleeps.waits[0] <= 2.5
    finally:
        await rest.close()


async def test_an_empty_bucket_is_waited_for_before_the_next_call(discord: FakeDiscord) -> None:
    discord.limits["messages"] = 2
    discord.window = 0.4
    sleeps = Sleeps()
    limits = RateLimits(sleep=sleeps, clock=sleeps.clock)
    rest = DiscordRest(
        bot_token=BOT_TOKEN, api_base_url=discord.url, timeout=5, limits=limits, clock=sleeps.clock
    )
    try:
        dm = await rest.call("POST", "/users/@me/channels", body={"recipient_id": ALICE})
        channel = dm["id"]

        async def post() -> None:
            path = "/channels/{channel}/messages"
            body = {"content": "hello"}
            await rest.call("POST", path, params={"channel": channel}, body=body, major=channel)

        await post()
        await post()
        assert sleeps.waits == []
        # The headers said 0 remaining: the client waits for the reset before asking.
        with pytest.raises(DiscordApiError) as raised:  # the recorded wait was not real
            await post()
        assert sleeps.waits and 0 < sleeps.waits[0] <= 0.4
        assert raised.value.status == 429 and discord.rate_limited == 1
    finally:
        await rest.close()


def test_buckets_are_kept_per_major_id() -> None:
    now = [100.0]
    limits = RateLimits(clock=lambda: now[0])
    one = RouteKey("POST", "/channels/{c}/messages", "1")
    two = RouteKey("POST", "/channels/{c}/messages", "2")
    headers = {
        "X-RateLimit-Bucket": "b",
        "X-RateLimit-Remaining": "0",
        "X-RateLimit-Reset-After": "3",
    }
    limits.update(one, headers)
    assert limits._bucket(one) is not None and limits._bucket(two) is None


@pytest.mark.parametrize(("status", "code"), [(401, 0), (403, 50001), (404, 10003)])
async def test_401_403_404_are_never_retried(discord: FakeDiscord, status: int, code: int) -> None:
    sleeps = Sleeps()
    sent = notifier(discord, sleeps)
    try:
        await sent.send(request(), delivery(), key="warm-up")
        before = len(discord.requests_to("create"))
        discord.script("create", Fault.status(status, {"message": "no", "code": code}))
        with pytest.raises(PermanentDeliveryError):
            await sent.send(request(), delivery(), key="row-1")
        assert len(discord.requests_to("create")) == before + 1 and sleeps.waits == []
    finally:
        await sent.close()


async def test_a_refused_token_stops_all_calls_for_a_while(discord: FakeDiscord) -> None:
    sent = notifier(discord, Sleeps(), token="MTEx.wrong.token")
    try:
        for key in ("row-1", "row-2", "row-3"):
            with pytest.raises(PermanentDeliveryError, match="Reset Token"):
                await sent.send(request(), delivery(), key=key)
        assert len(discord.requests) == 1  # one 401 from Discord; the rest never left
    finally:
        await sent.close()


@pytest.mark.parametrize("code", [50007, 50278])
async def test_a_user_the_bot_cannot_message_is_permanent_and_says_the_fix(
    discord: FakeDiscord, code: int
) -> None:
    discord.unreachable[ALICE] = code
    sleeps = Sleeps()
    sent = notifier(discord, sleeps)
    try:
        with pytest.raises(PermanentDeliveryError) as raised:
            await sent.send(request(), delivery(), key="row-1")
        assert str(code) in str(raised.value) and ALICE in str(raised.value)
        assert "share a server with the bot" in str(raised.value)
        assert sleeps.waits == []
    finally:
        await sent.close()


async def test_a_5xx_is_retried_with_backoff(discord: FakeDiscord) -> None:
    sleeps = Sleeps()
    sent = notifier(discord, sleeps)
    try:
        await sent.send(request(), delivery(), key="warm-up")
        discord.script("create", Fault.status(502), Fault.status(503))
        await sent.send(request(), delivery(), key="row-1")
        assert len(sleeps.waits) == 2 and len(discord.messages) == 2
    finally:
        await sent.close()


async def test_check_asks_who_the_bot_is_and_opens_a_dm_per_approver() -> None:
    from tapgate.channels import registry
    from tapgate.channels.discord.settings import DiscordConfig

    channel = registry.get("discord")
    assert channel is not None
    async with FakeDiscord(users={ALICE}) as fake:
        section = {"application_id": "1" * 18, "public_key": "ab" * 32, "bot_token": BOT_TOKEN}
        settings = DiscordConfig.model_validate({**section, "api_base_url": fake.url})
        results = await channel.check(settings, {"alice": ALICE, "bob": "100000000000000077"})
        assert [(r.what, r.ok) for r in results] == [
            ("bot token", True),
            ("slash commands", False),  # nothing registered them (the server does, at start)
            (f"approver alice ({ALICE})", True),
            ("approver bob (100000000000000077)", False),
        ]
        assert "not registered: /whoami" in results[1].detail and "curl" in results[1].detail
        assert "Copy User ID" in results[3].detail
        wrong = settings.model_copy(update={"bot_token": SecretStr("MTEx.wrong.token")})
        results = await channel.check(wrong, {"alice": ALICE})
        assert len(results) == 1 and not results[0].ok and "Reset Token" in results[0].detail
