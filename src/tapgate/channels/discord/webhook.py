"""Discord's Interactions Endpoint: verified presses become decisions, answered within 3 seconds.

Owns ``POST /webhooks/discord`` from the raw bytes to the interaction response::

    raw body ──X-Signature-Ed25519 over timestamp + body──► 401 (forged, or stale)
    ──JSON──► 400 | PING ──► {"type": 1}
    /whoami /grants /inbox /help ──► an ephemeral answer (:mod:`.commands`; stores nothing)
    Deny… / Reply… / Deny all / Edit… / Open inbox ──► modal (type 9), a link, or an
        ephemeral refusal (decides nothing, stores nothing)
    an edit's submission the policy refuses ──► ephemeral, why (stores nothing)
    a deciding press or a modal submission ──inbox.record (one INSERT)──► applied at once:
        decided within the budget ──► type 7, the card redrawn from the stored outcome
                                      | type 4 + flags 64, the refusal to the presser only
        not yet ──► type 6 (deferred): the decision still lands; a refusal follows as an
                    ephemeral follow-up, the card is edited by the outbox like every other

Discord invalidates an interaction not answered within 3 seconds ("This
interaction failed"), and never sends it again. So the interaction is
recorded before anything decides (record before acknowledging: a crash after
the INSERT loses nothing, the inbox replays it at start-up), then decided
while Discord waits, for at most :data:`ANSWER_BUDGET` seconds from
verification; past that the answer is a deferred update and the decision
finishes on its own. The other approvers' cards are edited by the outbox
dispatcher through the REST API, as for any decision.

De-duplication is on the interaction id: the decision's transaction
remembers it (``decisions.taps.tap``), so a replay of a stored interaction,
or the same signed body posted twice, decides once.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

from aiohttp import web

from tapgate.channels.contract import Handler
from tapgate.channels.discord.interactions import Interaction, Malformed, decode, encode, read
from tapgate.channels.discord.presses import DiscordPresses
from tapgate.channels.discord.responses import DEFERRED, Response, ephemeral
from tapgate.channels.discord.rest import DiscordRest
from tapgate.channels.discord.signature import SIGNATURE_HEADER, TIMESTAMP_HEADER, Verifier
from tapgate.channels.tap_log import TapLog
from tapgate.decisions.webhook_inbox import Inbox, InboxItem

__all__ = ["ANSWER_BUDGET", "DiscordInteractions"]

_log = logging.getLogger(__name__)

ANSWER_BUDGET = 2.0
"""Seconds from verification a decision may take before the answer is a deferred update.

Discord's limit is 3 s for the whole round trip; the rest is the network's."""
TRY_AGAIN = "tapgate could not record that just now; please press the button again."
_PONG = b'{"type":1}'


class DiscordInteractions:
    """Receives one application's interactions and decides presses through the gate."""

    def __init__(
        self,
        *,
        verifier: Verifier,
        application_id: str,
        presses: DiscordPresses,
        rest: DiscordRest,
        inbox: Inbox,
        tap_log: TapLog,
        on_reject: Callable[[str], None] | None = None,
        now: Callable[[], float] = time.time,
        budget: float = ANSWER_BUDGET,
    ) -> None:
        self._verifier = verifier
        self._application_id = application_id
        self._presses = presses
        self._rest = rest
        self._inbox = inbox
        self._tap_log = tap_log
        self._on_reject = on_reject
        self._now = now
        self.budget = budget
        """Seconds a decision may take before the answer is deferred (tests shorten it)."""
        self._tasks: set[asyncio.Task[Any]] = set()
        inbox.register("discord", self._replay)

    async def handle(self, headers: Mapping[str, str], body: bytes) -> tuple[int, Response]:
        """Verify, read, store what may decide, decide; the status and the response body."""
        checked = self._verifier.check(
            body,
            timestamp=headers.get(TIMESTAMP_HEADER),
            signature=headers.get(SIGNATURE_HEADER),
            now=self._now(),
        )
        if checked != "ok":
            _log.warning("Discord interaction refused: %s signature", checked)
            return self._reject("stale" if checked == "stale" else "signature", 401, checked)
        started = time.perf_counter()
        try:
            interaction = read(body)
        except Malformed as error:
            _log.warning("Discord interaction refused: signed but malformed (%s)", error)
            return self._reject("payload", 400, "malformed payload")
        if interaction.application_id != self._application_id:
            _log.warning(
                "Discord interaction for application %s refused", interaction.application_id
            )
            return self._reject("payload", 400, "another application")
        return 200, await self._respond(interaction, started)

    async def _respond(self, interaction: Interaction, started: float) -> Response:
        """The answer to a verified interaction of this application."""
        if interaction.kind == "ping":
            return {"type": 1}
        first = await self._presses.without_storing(interaction)
        if first is not None:  # a command, a modal opened, a refusal: nothing to store
            return first
        try:
            await self._inbox.record("discord", [(interaction.interaction_id, encode(interaction))])
        except Exception:  # nothing stored: decide nothing, and say so
            _log.exception("Discord interaction could not be stored")
            return ephemeral(TRY_AGAIN)
        return await self._answer(interaction, started)

    async def _answer(self, interaction: Interaction, started: float) -> Response:
        """The decision's response if it comes within the budget; else a deferred update."""
        work = self._start(self._apply(interaction, started))
        left = self.budget - (time.perf_counter() - started)
        done, _ = await asyncio.wait({work}, timeout=max(left, 0.0))
        if work in done:
            return work.result() or DEFERRED
        work.add_done_callback(lambda task: self._late(interaction, task))
        return DEFERRED

    async def _apply(self, interaction: Interaction, started: float | None) -> Response | None:
        """Decide a stored interaction; a failure is logged and the row stays for a replay."""
        await self._inbox.before_apply()
        try:
            return await self._presses.decide(interaction, started)
        except Exception:  # the store failed: the inbox row is still there
            _log.exception(
                "Discord interaction %s could not be decided", interaction.interaction_id
            )
            return ephemeral(TRY_AGAIN)

    def _late(self, interaction: Interaction, task: asyncio.Task[Response | None]) -> None:
        """A decision that missed the budget: tell a refused presser in a follow-up."""
        if task.cancelled():
            return
        response = task.result()
        if response is not None and response.get("type") == 4 and interaction.token:
            self._start(self._follow_up(interaction, response["data"]))

    async def _follow_up(self, interaction: Interaction, data: Mapping[str, Any]) -> None:
        try:
            await self._rest.call(
                "POST",
                "/webhooks/{application}/{token}",
                params={"application": self._application_id, "token": interaction.token},
                body=data,
                major=interaction.token,
                auth=False,
            )
        except Exception as error:  # the decision is stored; only the sentence is lost
            _log.warning("Discord follow-up failed: %s", error)

    def _replay(self, item: InboxItem) -> None:
        """A stored interaction acknowledged and never applied: decide it now (no one to answer)."""
        interaction = decode(item.payload)
        if interaction is None:
            _log.error("stored Discord interaction %s cannot be read; left alone", item.event_id)
            return
        self._start(self._apply(interaction, None))

    def _start(self, work: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _reject(self, reason: str, status: int, error: str) -> tuple[int, Response]:
        if self._on_reject is not None:
            self._on_reject(reason)
        return status, {"error": error}

    async def __call__(self, request: web.Request) -> web.Response:
        """The aiohttp handler: the raw bytes in, :meth:`handle`'s answer out."""
        try:
            body = await request.read()
        except web.RequestPayloadError:
            _log.warning("Discord interaction refused: unreadable body")
            status, answer = self._reject("payload", 400, "unreadable body")
        else:
            status, answer = await self.handle(request.headers, body)
        if answer == {"type": 1}:
            return web.Response(body=_PONG, content_type="application/json")
        text = json.dumps(answer, ensure_ascii=False, separators=(",", ":"))
        return web.Response(text=text, status=status, content_type="application/json")

    def handler(self, route: str) -> Handler:
        del route
        return self.__call__

    async def settled(self) -> None:
        """Wait for decisions and follow-ups under way (tests, and a graceful shutdown)."""
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def close(self) -> None:
        try:
            await asyncio.wait_for(self.settled(), 10.0)
        except TimeoutError:
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._rest.close()
