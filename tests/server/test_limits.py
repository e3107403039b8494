"""Per-agent limits on asking: over ``max_pending`` or ``asks_per_minute``, a 429 and no ping.

Through the real app over loopback, with limits small enough to reach.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from aiohttp import web

from tapgate.config import Config, parse_config
from tapgate.delivery.recording import RecordingNotifier
from tapgate.gate.clock import ManualClock
from tapgate.policy.limits import AgentLimits
from tapgate.server.app import build_app
from tapgate.server.keys import DISPATCHER, METRICS
from tests.fakes.served import until
from tests.server.test_api import CI, Api, make_config

Client = Any


def limited_config(db_url: str, **limits: Any) -> Config:
    raw = make_config(db_url).model_dump(mode="json")
    raw["agents"][0] |= limits
    raw["agents"][0]["token"] = CI
    raw["agents"][1]["token"] = "other-agent-token-0123456789abcdef"
    return parse_config(raw)


@pytest.fixture
async def limited(
    request: pytest.FixtureRequest,
    migrated_db_url: str,
    clock: ManualClock,
    aiohttp_client: Callable[[web.Application], Awaitable[Client]],
) -> tuple[Api, RecordingNotifier]:
    notifier = RecordingNotifier("console")
    config = limited_config(migrated_db_url, **request.param)
    app = build_app(config, clock=clock, notifiers=[notifier])
    return Api(client=await aiohttp_client(app), clock=clock), notifier


def refused_count(api: Api, limit: str) -> float:
    labels = {"agent": "ci-bot", "limit": limit}
    value = api.app[METRICS].registry.get_sample_value("tapgate_asks_refused_total", labels)
    return value or 0.0


async def sent(notifier: RecordingNotifier, api: Api) -> int:
    """Cards sent once everything committed so far was delivered.

    One dispatcher pass beside its own loop (claims are leased: nothing is sent
    twice), instead of two seconds of waiting for that loop to get there.
    """
    await api.app[DISPATCHER].run_once()
    return len(notifier.calls)


@pytest.mark.parametrize("limited", [{"max_pending": 2, "asks_per_minute": 0}], indirect=True)
async def test_over_max_pending_is_a_429_and_nobody_is_pinged(
    limited: tuple[Api, RecordingNotifier],
) -> None:
    api, notifier = limited
    first, second = await api.ask(n=1), await api.ask(n=2)
    await until(lambda: len(notifier.calls) == 4)  # each ask pinged alice and bob
    before = await sent(notifier, api)
    status, body, resp = await api.call(
        "POST", "/v1/tool-calls", {"tool": "deploy", "arguments": {"n": 3}}
    )
    assert status == 429 and body["error"]["code"] == "too_many_asks", body
    assert int(resp.headers["Retry-After"]) >= 1
    assert await api.requests_in_store() == 2
    assert await sent(notifier, api) == before  # the refused ask pinged nobody
    assert refused_count(api, "max_pending") == 1
    # Re-asking an identical pending call reuses it: no new ping, never refused.
    status, again = await api.submit("deploy", arguments={"n": 1})
    assert (status, again["id"], again["reused"]) == (200, first, True)
    # Allowed calls are never limited.
    assert (await api.submit("read_file", arguments={"path": "a"}))[1]["decision"] == "allow"
    await api.gate.resolve(second, "deny", by="alice")
    status, _ = await api.submit("deploy", arguments={"n": 3})
    assert status == 201


@pytest.mark.parametrize("limited", [{"max_pending": 0, "asks_per_minute": 3}], indirect=True)
async def test_over_asks_per_minute_is_a_429_until_the_minute_passes(
    limited: tuple[Api, RecordingNotifier],
) -> None:
    api, _ = limited
    for n in range(3):
        await api.gate.resolve(await api.ask(n=n), "approve", by="alice")
    status, body, resp = await api.call(
        "POST", "/v1/tool-calls", {"tool": "deploy", "arguments": {"n": 9}}
    )
    assert status == 429 and "3 asks a minute" in body["error"]["message"]
    assert 1 <= int(resp.headers["Retry-After"]) <= 60
    api.clock.advance(61)
    status, _ = await api.submit("deploy", arguments={"n": 9})
    assert status == 201
    assert refused_count(api, "asks_per_minute") == 1


@pytest.mark.parametrize("limited", [{"max_pending": 3, "asks_per_minute": 0}], indirect=True)
async def test_concurrent_asks_never_overshoot_the_limit(
    limited: tuple[Api, RecordingNotifier],
) -> None:
    api, _ = limited
    answers = await asyncio.gather(*(api.submit("deploy", arguments={"n": n}) for n in range(10)))
    assert sorted(status for status, _ in answers) == [201] * 3 + [429] * 7
    assert await api.requests_in_store() == 3


@pytest.mark.parametrize("limited", [{"max_pending": 2, "asks_per_minute": 0}], indirect=True)
async def test_a_batch_over_the_limit_creates_nothing(
    limited: tuple[Api, RecordingNotifier],
) -> None:
    api, _ = limited
    calls = [{"tool": "deploy", "arguments": {"n": n}} for n in range(3)]
    status, body, _ = await api.call("POST", "/v1/tool-call-batches", {"calls": calls})
    assert status == 429, body
    assert await api.requests_in_store() == 0


async def test_limits_are_per_agent_and_default_from_the_config(db_url: str) -> None:
    config = make_config(db_url)
    limits = {a.name: a.limits() for a in config.agents}
    assert limits["ci-bot"].max_pending == 50 and limits["ci-bot"].asks_per_minute == 60
    lifted = limited_config(db_url, max_pending=0, asks_per_minute=0)
    assert lifted.agents[0].limits() == AgentLimits()  # 0 lifts a limit
