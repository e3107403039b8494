"""The chat-side world of the served-app tests: who the people are, the channels, waiting.

The tests that run the real app (``build_app``) against both fake platforms
all need the same secrets, the same three people with a Slack and a LINE id
each, the same Slack and LINE channel settings pointing at the fakes, a way
to let the app's background work run, and a Slack button click. They were
copied into each such test module; here they are written once, so a change
to how a channel is configured or a click is shaped is made in one place.
Each test module still writes its own approvers and policy: those are what
the tests are about.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from typing import Any

from tests.fakes.slack import DEFAULT_BOT_TOKEN

__all__ = [
    "AGENT_TOKEN",
    "ALICE",
    "BOB",
    "CAROL",
    "LINE_SECRET",
    "LINE_TOKEN",
    "SLACK_SECRET",
    "TEAM",
    "channels",
    "click",
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
