"""Teams' messaging endpoint: ``POST /webhooks/teams``, from the bearer token to the answer.

::

    Authorization ──BotAuth (7 checks)──► 401 / 403 / 503, one log line
    raw body ──JSON──► 400 | activity ──serviceUrl == the token's, channel endorsed──► 403
    a press ──inbox.record (one INSERT)──► 503 | applied at once:
        decided within ANSWER_BUDGET ──► 200 + the card
        not yet ──► 200 + "recorded" (the decision lands on its own; the card is redrawn)
    installed / first message ──► the approver's conversation stored ──► 200
    "whoami" / "grants" / "inbox" / "help" ──► a reply in the chat (after the 200, .commands)

A press (``adaptiveCard/action`` invoke, or its ``Action.Submit`` fallback)
is recorded in the webhook inbox before it is answered, then decided at once
and answered *with the redrawn card* in the invoke response: Teams gives a
bot 10-15 s before "Something went wrong", and a decision here takes
milliseconds; one still running after :data:`ANSWER_BUDGET` (a stuck
database) is answered with a sentence instead, and finishes on its own.
The decision's transaction remembers the activity id and deletes the inbox
row, so a redelivered press, or a replay after a crash between the record
and the decision, acts once (``_replay``). A press that
came as ``Action.Submit`` has no invoke response: its card is redrawn with
``updateActivity`` after the 200. The other approvers' cards are redrawn by
the outbox's update pass (:meth:`.notifier.TeamsNotifier.update`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import aiohttp
from aiohttp import web

from tapgate.channels.contract import ConversationBook, Handler
from tapgate.channels.tap_log import TapLog
from tapgate.channels.teams.activities import Activity, Malformed, decode, encode, read
from tapgate.channels.teams.auth import BotAuth, Refused
from tapgate.channels.teams.card_parts import CARD_TYPE
from tapgate.channels.teams.commands import TeamsCommands, command_word
from tapgate.channels.teams.connector import BotTokens, Connector
from tapgate.channels.teams.settings import TeamsConfig
from tapgate.channels.teams.taps import TeamsTaps
from tapgate.decisions.chat_commands import LinkMaker
from tapgate.decisions.webhook_inbox import Inbox, InboxItem
from tapgate.gate.gate import Gate

__all__ = ["ANSWER_BUDGET", "STILL_DECIDING", "TeamsResult", "TeamsWebhook"]

_log = logging.getLogger(__name__)

T = TypeVar("T")

ANSWER_BUDGET = 4.0
"""Seconds from verification a press's decision may take before the invoke is answered
without it: Teams shows "Something went wrong" when a bot takes 10-15 s (5 s on some
clients); a decision takes milliseconds unless the database is stuck."""
STILL_DECIDING = "Your press is recorded; the card will update once it is decided."
_CHANNEL = "teams"
_TEAMS = "msteams"
_TRY_AGAIN = "tapgate could not record that just now; please press the button again."


@dataclass(frozen=True, kw_only=True, slots=True)
class TeamsResult:
    """The answer for the Bot Connector: a status and a JSON body, free of any framework."""

    status: int
    body: Mapping[str, Any] = field(default_factory=dict)


class TeamsWebhook:
    """Receives Bot Connector activities for one bot and resolves presses through ``gate``."""

    def __init__(
        self,
        *,
        gate: Gate,
        settings: TeamsConfig,
        inbox: Inbox,
        on_reject: Callable[[str], None] | None = None,
        on_decision: Callable[[float], None] | None = None,
        tap_log: int | None = logging.INFO,
        conversations: ConversationBook | None = None,
        budget: float = ANSWER_BUDGET,
        links: LinkMaker | None = None,
        public_url: str | None = None,
    ) -> None:
        self._gate = gate
        self._conversations = conversations
        self._settings = settings
        self._auth = BotAuth(
            app_id=settings.app_id,
            metadata_url=settings.openid_metadata_url,
            now=lambda: gate.clock.now().timestamp(),
            timeout=settings.timeout,
        )
        self._inbox = inbox
        self._inbox.register(_CHANNEL, self._replay)
        self._on_reject = on_reject
        self._commands = TeamsCommands(gate, links)
        self._taps = TeamsTaps(
            gate,
            TapLog(_log, "Teams", level=tap_log, on_decision=on_decision),
            self._commands,
            public_url=public_url,
        )
        self._session: aiohttp.ClientSession | None = None
        tokens = BotTokens(
            app_id=settings.app_id,
            app_password=settings.app_password.get_secret_value(),
            token_url=settings.token_endpoint,
            session=self._http,
        )
        self._connector = Connector(tokens, self._http)
        self.budget = budget
        """Seconds a decision may take before the invoke is answered without it."""
        self._tasks: set[asyncio.Task[Any]] = set()

    async def handle(self, headers: Mapping[str, str], body: bytes) -> TeamsResult:
        """Verify, read, act; never raises for bad input (see the module docstring)."""
        try:
            claims = await self._auth.verify(_header(headers, "Authorization"))
        except Refused as refused:
            return self._reject("token", refused.status, refused.why)
        started = time.perf_counter()
        try:
            activity = read(body)
        except Malformed as error:
            return self._reject("payload", 400, f"verified but malformed activity ({error})")
        if activity.service_url.rstrip("/") != claims.service_url.rstrip("/"):
            return self._reject("token", 403, "serviceUrl differs from the token's claim")
        if activity.channel_id != _TEAMS or activity.channel_id not in claims.endorsements:
            return self._reject("token", 403, f"channel {activity.channel_id[:32]!r} not endorsed")
        if activity.is_press:
            return await self._press(activity, started)
        await self._remember_conversation(activity)
        word = command_word(activity.text) if activity.kind == "message" else None
        if word is not None:
            self._start(self._command(activity, word))
        return TeamsResult(status=200)

    async def _press(self, activity: Activity, started: float) -> TeamsResult:
        try:
            await self._inbox.record(_CHANNEL, [(activity.activity_id, encode(activity))])
        except Exception:  # no answer that could read as success: Teams shows an error
            _log.exception("Teams press could not be stored; answered 503")
            return TeamsResult(status=503, body={"error": "try again"})
        work = self._start(self._apply(activity, started))
        left = self.budget - (time.perf_counter() - started)
        done, _ = await asyncio.wait({work}, timeout=max(left, 0.0))
        if work not in done:  # stored: answer now, the decision lands on its own
            work.add_done_callback(lambda task: self._late(activity, task))
            return _invoke_message(STILL_DECIDING) if activity.is_invoke else _OK
        answer = work.result()
        if answer is None:
            return _invoke_message(_TRY_AGAIN) if activity.is_invoke else _OK
        if activity.is_invoke:
            content = answer["attachments"][0]["content"]
            return TeamsResult(
                status=200, body={"statusCode": 200, "type": CARD_TYPE, "value": content}
            )
        if activity.reply_to_id:  # Action.Submit: no invoke response, redraw the card in place
            self._start(self._redraw(activity, activity.reply_to_id, answer))
        return TeamsResult(status=200)

    async def _apply(self, activity: Activity, started: float | None) -> dict[str, Any] | None:
        """Decide a stored press; the card to answer with, or ``None`` (the row stays)."""
        await self._inbox.before_apply()
        try:
            return await self._taps.press(activity, started)
        except Exception:  # stored: the heartbeat's replay retries it
            _log.exception("Teams press %s could not be applied", activity.activity_id)
            return None

    def _late(self, activity: Activity, task: asyncio.Task[dict[str, Any] | None]) -> None:
        """A press decided after its answer: redraw the pressed card with what it says now."""
        if task.cancelled() or activity.reply_to_id is None:
            return  # a decided card is redrawn by the outbox's update pass anyway
        answer = task.result()
        if answer is not None:
            self._start(self._redraw(activity, activity.reply_to_id, answer))

    def _replay(self, item: InboxItem) -> None:
        """A stored press that was never applied: apply it now (nobody waits for its card)."""
        activity = decode(item.payload)
        if activity is None:
            _log.error("stored Teams press %s cannot be read; left alone", item.event_id)
            return
        self._start(self._apply(activity, None))

    async def _remember_conversation(self, activity: Activity) -> None:
        """Where a configured approver can be reached: their 1:1 chat with the bot."""
        personal = activity.conversation_type in (None, "personal")
        removed = activity.install_action == "remove"
        if not personal or removed or activity.kind not in _CAPTURED:
            return
        approver = self._gate.directory.identify(_CHANNEL, activity.presser)
        if approver is None or self._conversations is None:
            return  # only approvers' chats are kept: anyone in the tenant can install the app
        reference = {
            "service_url": activity.service_url,
            "conversation_id": activity.conversation_id,
            "tenant_id": activity.tenant_id or "",
        }
        try:
            await self._conversations.put(
                _CHANNEL, activity.presser, reference, self._gate.clock.now()
            )
        except Exception:  # Teams sends the next message's reference again
            _log.exception("Teams conversation of %s could not be stored", approver)
            return
        _log.info("Teams conversation with approver %s stored", approver)

    async def _command(self, activity: Activity, word: str) -> None:
        try:
            reply = await self._commands.answer(word, activity.presser)
            await self._connector.send(activity.service_url, activity.conversation_id, reply)
        except Exception as error:  # a reply is a courtesy: never a traceback for it
            _log.warning("Teams reply to %r failed: %s", word, error)

    async def _redraw(self, activity: Activity, activity_id: str, answer: dict[str, Any]) -> None:
        try:
            await self._connector.update(
                activity.service_url, activity.conversation_id, activity_id, answer
            )
        except Exception as error:  # the decision stands; the outbox's update pass redraws too
            _log.warning("Teams card redraw failed: %s", error)

    def _start(self, work: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _reject(self, reason: str, status: int, why: str) -> TeamsResult:
        _log.warning("Teams webhook refused (%d): %s", status, why)
        if self._on_reject is not None:
            self._on_reject(reason)
        return TeamsResult(status=status, body={"error": "refused"})

    def _http(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=self._settings.timeout)
            )
        return self._session

    async def __call__(self, request: web.Request) -> web.Response:
        """The aiohttp handler: the raw bytes in, :meth:`handle`'s answer out."""
        try:
            body = await request.read()
        except web.RequestPayloadError:
            result = self._reject("payload", 400, "unreadable body")
        else:
            result = await self.handle(request.headers, body)
        return web.json_response(dict(result.body), status=result.status)

    def handler(self, route: str) -> Handler:
        """The one route's handler (``webhook``)."""
        del route
        return self.__call__

    async def settled(self) -> None:
        """Wait for replies and redraws under way (tests, and a graceful shutdown)."""
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def close(self) -> None:
        """Let work under way finish (bounded), then close the HTTP sessions."""
        try:
            await asyncio.wait_for(self.settled(), self._settings.timeout)
        except TimeoutError:
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._auth.close()
        session, self._session = self._session, None
        if session is not None:
            await session.close()


_OK = TeamsResult(status=200)
_CAPTURED = frozenset({"conversationUpdate", "installationUpdate", "message"})


def _invoke_message(text: str) -> TeamsResult:
    """An invoke answered with a message instead of a card (the card stays as it was)."""
    body = {"statusCode": 200, "type": "application/vnd.microsoft.activity.message", "value": text}
    return TeamsResult(status=200, body=body)


def _header(headers: Mapping[str, str], name: str) -> str | None:
    value = headers.get(name)
    if value is not None:
        return value
    wanted = name.lower()
    return next((v for k, v in headers.items() if k.lower() == wanted), None)
