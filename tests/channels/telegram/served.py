"""The real app (``build_app``) against the fake Telegram Bot API (and the fake LINE API).

alice and bob approve on Telegram, carol on LINE and Telegram; mallory is on
Telegram and approves nothing. With ``slack=True`` the fake Slack API runs
too and alice is on Slack as well (:data:`ALICE_SLACK`). The agent asks over
HTTP; the real dispatcher sends cards to the fakes; presses arrive by long
poll (``mode: polling``) or are posted to ``/webhooks/telegram`` with the
secret header (``mode: webhook``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, cast

from aiohttp import web

from tapgate.channels.telegram.receiver import TelegramReceiver
from tapgate.config import parse_config
from tapgate.gate.clock import ManualClock
from tapgate.server.app import build_app
from tapgate.server.routes import RECEIVERS
from tests.fakes.line import FakeLine
from tests.fakes.served import LINE_TOKEN, TEAM, Client, LineServed, channels, until
from tests.fakes.slack import FakeSlack
from tests.fakes.telegram import BOT_TOKEN, FakeTelegram, TelegramMessage, webhook_headers

AGENT_TOKEN = "ci-bot-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {AGENT_TOKEN}"}
SECRET = "tg-webhook-secret_0123456789"
ALICE, BOB, CAROL, MALLORY = "111111111", "222222222", "333333333", "999999999"
CAROL_LINE = "U" + "c3" * 16
PUBLIC_URL = "http://gate.example.test"
"""``server.public_url`` when a suite sets one (sign-in links are made on it)."""
ALICE_SLACK = "U0ALICE"
"""alice's Slack member id, when the suite runs Slack too (``serving(slack=True)``)."""
PACE = 0.01
"""Seconds between two messages to one chat, on the manual clock: :meth:`Served.card` moves it."""


def config(
    telegram_url: str,
    line_url: str,
    db_url: str,
    *,
    mode: str,
    public_url: str | None = None,
    slack_url: str | None = None,
    timeout: float = 5,
    **policy: Any,
) -> Any:
    section: dict[str, Any] = {
        "bot_token": BOT_TOKEN,
        "api_base_url": telegram_url,
        "mode": mode,
        "poll_timeout": 1,
        "timeout": timeout,
        "pace": PACE,
    }
    if mode == "webhook":
        section["webhook_secret"] = SECRET
    rules = policy.pop("rules", None) or [
        {"tool": "deploy", "action": "ask", "approvers": ["alice", "bob", "carol"]},
        {"tool": "quorum", "action": "ask", "approvers": ["alice", "bob"], "quorum": 2},
        {"tool": "mine", "action": "ask", "approvers": ["alice"]},
    ]
    return parse_config(
        {
            "server": {
                "max_wait": 60,
                "heartbeat_interval": 3600,
                **({"public_url": public_url} if public_url else {}),
            },
            "store": {"url": db_url},
            "agents": [{"name": "ci", "token": AGENT_TOKEN}],
            "approvers": [
                {
                    "name": "alice",
                    "telegram": ALICE,
                    **({"slack": ALICE_SLACK, "slack_team": TEAM} if slack_url else {}),
                },
                {"name": "bob", "telegram": BOB},
                {"name": "carol", "telegram": CAROL, "line": CAROL_LINE},
                {"name": "mallory", "telegram": MALLORY},
            ],
            "channels": {
                **channels(line_url=line_url, slack_url=slack_url),
                "telegram": section,
            },
            "policy": {"rules": rules, **policy},
        },
        env={},
    )


@dataclass
class Served(LineServed):
    """The served app, the fakes, and what a Telegram test asks of them."""

    telegram: FakeTelegram
    mode: str = "polling"
    slack: FakeSlack | None = None

    @property
    def receiver(self) -> TelegramReceiver:
        return cast(TelegramReceiver, self.app[RECEIVERS]["telegram"])

    async def ask(self, tool: str = "deploy", arguments: dict[str, Any] | None = None) -> str:
        body = {"tool": tool, "arguments": arguments or {"env": "prod"}, "session": "s-1"}
        async with self.client.post("/v1/tool-calls", json=body, headers=AUTH) as response:
            answer: dict[str, Any] = await response.json()
            assert response.status in (200, 201, 202), answer
            return str(answer["id"])

    async def waited(self, request_id: str, wait: float = 30) -> dict[str, Any]:
        url = f"/v1/tool-calls/{request_id}?wait={wait}"
        async with self.client.get(url, headers=AUTH) as response:
            answer: dict[str, Any] = await response.json()
            return answer

    async def card(self, user: str, request_id: str) -> TelegramMessage:
        """``user``'s card of ``request_id``, once the dispatcher sent it."""

        def find() -> TelegramMessage | None:
            for message in self.telegram.in_chat(user):
                if any(request_id in b["callback_data"] for r in message.keyboard for b in r):
                    return message
                if message.versions and request_id[:8] in message.versions[0]:
                    return message
            return None

        await self.ticking(lambda: find() is not None)
        found = find()
        assert found is not None
        return found

    async def ticking(self, predicate: Callable[[], bool]) -> None:
        """Wait for ``predicate`` (I/O only) while the manual clock moves one pace at a time.

        A second message to one chat waits its turn on the gate's clock, which
        moves only when a test moves it: here, by :data:`PACE` per look.
        """
        for _ in range(2000):
            if predicate():
                return
            self.clock.advance(PACE)
            await asyncio.sleep(0.005)
        raise AssertionError("condition never became true")

    async def webhook(self, update: dict[str, Any], secret: str = SECRET) -> int:
        """Post ``update`` as Telegram would; the status, once its work is done."""
        async with self.client.post(
            "/webhooks/telegram", json=update, headers=webhook_headers(secret)
        ) as response:
            status = response.status
        await self.receiver.settled()
        return status

    async def deliver(self, update: dict[str, Any]) -> None:
        """Hand ``update`` to tapgate as the mode does; return once it was applied."""
        if self.mode == "webhook":
            assert await self.webhook(update) == 200
            return
        ident = int(update["update_id"])
        # stored and confirmed; a poll that failed waits its back-off on the manual clock
        await self.ticking(lambda: (self.receiver.offset or 0) > ident)
        await self.receiver.settled()

    async def press(self, user: str, message: TelegramMessage, label: str) -> dict[str, Any]:
        """``user`` presses the button labelled ``label…`` on ``message``; applied on return."""
        update = await self.telegram.press(user, message, message.data(label))
        await self.deliver(update)
        return update

    async def say(
        self, user: str, text: str, *, reply_to: TelegramMessage | None = None
    ) -> TelegramMessage | None:
        """``user`` sends ``text`` to the bot; the bot's newest message there once applied."""
        await self.deliver(await self.telegram.type(user, text, reply_to=reply_to))
        sent = self.telegram.in_chat(user)
        return sent[-1] if sent else None

    async def ask_batch(self, *tools: str) -> tuple[str, list[str]]:
        """The agent submits one call per ``tools`` as a batch: its id and the calls' ids."""
        calls = [{"tool": t, "arguments": {"n": n}} for n, t in enumerate(tools)]
        body = {"calls": calls, "session": "s-1"}
        async with self.client.post("/v1/tool-call-batches", json=body, headers=AUTH) as r:
            batch: dict[str, Any] = await r.json()
            assert r.status == 201, batch
        return str(batch["id"]), [str(c["id"]) for c in batch["calls"]]

    async def settle(self, until_answers: int | None = None) -> None:
        """Let the poll pick presses up and apply them (I/O only)."""
        if until_answers is not None:
            await until(lambda: len(self.telegram.answers) >= until_answers)
        await until(lambda: self.telegram.pending_updates() == 0)
        await self.receiver.settled()


async def serving(
    db_url: str,
    clock: ManualClock,
    aiohttp_client: Callable[[web.Application], Awaitable[Client]],
    *,
    mode: str = "polling",
    public_url: str | None = None,
    slack: bool = False,
    before: Callable[[FakeTelegram], None] | None = None,
    **policy: Any,
) -> AsyncIterator[Served]:
    """The app on the fakes; ``before`` scripts the fake Bot API before the app starts."""
    started = {ALICE, BOB, CAROL, MALLORY}
    async with contextlib.AsyncExitStack() as fakes:
        telegram = await fakes.enter_async_context(FakeTelegram(started=started))
        line = await fakes.enter_async_context(FakeLine(access_token=LINE_TOKEN))
        slack_api = await fakes.enter_async_context(FakeSlack()) if slack else None
        if before is not None:
            before(telegram)
        settings = config(
            telegram.url,
            line.url,
            db_url,
            mode=mode,
            public_url=public_url,
            slack_url=None if slack_api is None else slack_api.url,
            **policy,
        )
        app = build_app(settings, clock=clock)
        client = await aiohttp_client(app)
        served = Served(
            app=app,
            client=client,
            clock=clock,
            line=line,
            telegram=telegram,
            mode=mode,
            slack=slack_api,
        )
        yield served
        await client.close()  # the app (and its poll) stops before the fakes do
