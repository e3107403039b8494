"""The chat-side world of the served-app tests: who the people are, the channels, waiting.

The tests that run the real app (``build_app``) against both fake platforms
all need the same secrets, the same three people with a Slack and a LINE id
each, the same Slack and LINE channel settings pointing at the fakes, a way
to let the app's background work run, and a Slack button click. They were
copied into each such test module; here they are written once, so a change
to how a channel is configured or a click is shaped is made in one place.
Each test module still writes its own approvers and policy: those are what
the tests are about. ``ServedApp`` and ``LineServed`` are the bases of the
suites' ``Served`` records: the app, its test client, the clock and, for
LINE, posting signed events and reading what LINE was asked to reply.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestClient

from tapgate.gate.clock import ManualClock
from tapgate.gate.gate import Gate
from tapgate.server.keys import GATE
from tests.fakes.line import FakeLine
from tests.fakes.receivers import line_webhook
from tests.fakes.slack import DEFAULT_BOT_TOKEN, FakeSlack, SlackMessage, dm_channel_for
from tests.fakes.taps import line_body, line_headers

__all__ = [
    "AGENT_TOKEN",
    "ALICE",
    "BOB",
    "CAROL",
    "LINE_SECRET",
    "LINE_TOKEN",
    "SLACK_SECRET",
    "TEAM",
    "Client",
    "LineServed",
    "ServedApp",
    "channels",
    "click",
    "slack_card",
    "until",
]

SLACK_SECRET = "test-slack-signing-secret-0123"
LINE_SECRET = "test-line-channel-secret"
LINE_TOKEN = "line-test-channel-access-token"
TEAM = "T0TAPGATE"
AGENT_TOKEN = "ci-bot-token-0123456789abcdef"
# (Slack id, LINE id) of each person
ALICE = ("U0ALICE", "U" + "a1" * 16)
BOB = ("U0BOB", "U" + "b2" * 16)
CAROL = ("U0CAROL", "U" + "c3" * 16)

Client = TestClient[web.Request, web.Application]


def channels(*, slack_url: str | None = None, line_url: str | None = None) -> dict[str, Any]:
    """The config's ``channels``: no console, Slack and/or LINE on the fakes at these URLs."""
    found: dict[str, Any] = {"console": {"enabled": False}}
    if slack_url is not None:
        found["slack"] = {
            "bot_token": DEFAULT_BOT_TOKEN,
            "signing_secret": SLACK_SECRET,
            "api_base_url": slack_url,
            "timeout": 5,
        }
    if line_url is not None:
        found["line"] = {
            "channel_access_token": LINE_TOKEN,
            "channel_secret": LINE_SECRET,
            "api_base_url": line_url,
            "timeout": 5,
        }
    return found


async def until(predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    """Let the app, its tasks and the fakes run until ``predicate`` holds (I/O only).

    It decides *when* a test looks, never what it asserts: no outcome is awaited here.
    """
    for _ in range(int(timeout / 0.005)):
        if predicate():
            return
        await asyncio.sleep(0.005)
    raise AssertionError("condition never became true")


async def slack_card(
    slack: FakeSlack, user_id: str, needle: str, timeout: float = 10.0
) -> SlackMessage:
    """The first message in ``user_id``'s DM whose blocks contain ``needle``, once it was sent.

    The notifiers post cards in the background: this waits (I/O only, as ``until``).
    """
    channel = dm_channel_for(user_id)

    def find() -> SlackMessage | None:
        for message in slack.messages.values():
            if message.channel == channel and needle in json.dumps(message.blocks):
                return message
        return None

    await until(lambda: find() is not None, timeout)
    found = find()
    assert found is not None
    return found


def click(action: str, value: str, user: tuple[str, str], channel: str) -> dict[str, Any]:
    """A Slack ``block_actions`` payload for one button of a card in ``channel``.

    Each call is a new click (its own ``trigger_id``), as when a person taps again.
    """
    return {
        "type": "block_actions",
        "user": {"id": user[0], "username": "x", "name": "x", "team_id": TEAM},
        "api_app_id": "A0TAPGATE",
        "container": {"type": "message", "message_ts": "1.000100", "channel_id": channel},
        "trigger_id": f"{uuid.uuid4().int % 10**12}.{uuid.uuid4().hex}",
        "team": {"id": TEAM, "domain": "tapgate"},
        "channel": {"id": channel, "name": "directmessage"},
        "actions": [
            {
                "action_id": f"tapgate_{action}",
                "block_id": f"tapgate:{value}",
                "value": value,
                "type": "button",
                "action_ts": "1767225600.123456",
            }
        ],
    }


@dataclass
class ServedApp:
    """The real app (``build_app``), its aiohttp test client and the manual clock.

    Each suite's ``Served`` adds the fakes it talks to and what it asks of the app.
    """

    app: web.Application
    client: Client
    clock: ManualClock

    @property
    def gate(self) -> Gate:
        return self.app[GATE]


@dataclass
class LineServed(ServedApp):
    """A served app whose approvers are on the fake LINE API (channel secret ``LINE_SECRET``)."""

    line: FakeLine

    async def post(self, *events: dict[str, Any]) -> int:
        """Post ``events`` signed to ``/webhooks/line``; the status, once replies went out."""
        body = line_body(*events)
        headers = line_headers(LINE_SECRET, body)
        async with self.client.post("/webhooks/line", data=body, headers=headers) as response:
            status = response.status
        await line_webhook(self.app).settled()  # decisions and replies happen after the 200
        return status

    def replied_to(self, event: dict[str, Any]) -> list[str]:
        """The texts LINE was asked to reply to ``event`` with."""
        token = event["replyToken"]
        return [m["text"] for r in self.line.replies if r.reply_token == token for m in r.messages]
