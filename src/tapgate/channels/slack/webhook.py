"""Slack's interactivity endpoint: verified taps become decisions, refusals are told ephemerally.

Owns ``POST /webhooks/slack`` (or the same through Socket Mode) from the raw
bytes to the answer::

    raw body ──X-Slack-Signature, timestamp within 300 s──► 401
             ──UTF-8, form / JSON object──► 400
             ──slack-bolt routes action_id / callback_id──► listener
    tap ──inbox.record (one INSERT)──► 503 | ack: 200
        ─(task owned here)─► ``_slack_taps``: workspace? ──core.taps.tap──► decision | ephemeral
    Deny ─► ``_slack_taps``: core.taps.check ──► views.open (reason modal) | ephemeral
    modal submitted ─► ack (closes it) ─► tap(deny, reason) | ephemeral
    Reply (a question) ─► core.taps.check ──► views.open (answer modal) | ephemeral
    answer submitted ─► blank? ack with an error | ack ─► tap(reply, answer) | ephemeral
    Dismiss (a question, behind a confirm dialog) ─► tap(dismiss)
    Approve all ─► core.taps.tap_batch | Deny all ─► ``_slack_batches`` (reason modal)
    /tapgate <subcommand> ─► ``_slack_commands`` ─► ack with an ephemeral answer
    Open inbox (any card) ─► ack ─► ``_slack_sign_in`` (core.chat_commands) ─► ephemeral link
    Revoke (a listed grant) ─inbox.record─► ack ─► ``_slack_grants`` (core.own_grants)
    Edit… ─► ``_slack_edits`` (edit modal) ─► submitted: judged, errors in the modal | stored,
        ack ─► core.edits.approve_edit

What a tap *means* (who may, what is refused and audited, the words) is
:mod:`tapgate.decisions.taps`; this module only speaks Slack: it verifies, routes,
stores and acknowledges; ``_slack_taps`` does the work after the ack, in tasks
owned here. A decided request's message is rewritten by the outbox dispatcher
(every message of the request, on every channel), so a successful tap needs
no answer here; a refused or late one gets an ephemeral sentence.

Record before acknowledging (decision 0017-record-before-acknowledge): what decides is stored
in the inbox (:mod:`tapgate.decisions.webhook_inbox`) under a stable event id
(``_slack_inbox``) before the 200; the decision's transaction remembers the
id and deletes the row, so a replay after a crash decides once. Opening a
modal is not stored: it decides nothing, and its trigger id lives 3 seconds.
Bolt is fenced in by ``_slack_bolt``.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response
from slack_bolt.async_app import AsyncAck
from slack_bolt.response import BoltResponse
from slack_sdk.web.async_client import AsyncWebClient

from tapgate.channels.contract import Handler
from tapgate.channels.slack import inbox as _slack_inbox
from tapgate.channels.slack.bolt import bolt_request, build_bolt
from tapgate.channels.slack.commands import SlashCommands
from tapgate.channels.slack.grants import SUMMARY, SlackGrantTaps
from tapgate.channels.slack.payloads import (
    ANSWER_BLOCK,
    DENY_ALL_CALLBACK_ID,
    DENY_CALLBACK_ID,
    EDIT_CALLBACK_ID,
    REPLY_CALLBACK_ID,
    BatchInteraction,
    Interaction,
    RevokeInteraction,
    parse_action,
    parse_batch_action,
    parse_deny_all_submission,
    parse_deny_submission,
    parse_edit_action,
    parse_edit_submission,
    parse_reply_submission,
    parse_revoke,
)
from tapgate.channels.slack.replies import SlackReplies
from tapgate.channels.slack.sign_in import SlackSignIn
from tapgate.channels.slack.signature import (
    SIGNATURE_HEADER,
    SIGNATURE_WINDOW,
    TIMESTAMP_HEADER,
    check_signature,
    slack_signature,
    verify_signature,
)
from tapgate.channels.slack.socket import close_socket, open_socket_mode
from tapgate.channels.slack.taps import SlackTaps
from tapgate.channels.tap_log import TapLog
from tapgate.decisions.buttons import (
    INBOX_ACTION_ID,
    SLACK_ACTIONS,
    SLACK_BATCH_ACTIONS,
    SLACK_EDIT_ACTION_ID,
    SLACK_REVOKE_ACTION_ID,
)
from tapgate.decisions.chat_commands import INBOX_SUMMARY, LinkMaker
from tapgate.decisions.webhook_inbox import Inbox, InboxItem
from tapgate.gate.gate import Gate

if TYPE_CHECKING:
    from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler

__all__ = [
    "SIGNATURE_WINDOW",
    "SlackWebhook",
    "check_signature",
    "slack_signature",
    "verify_signature",
]

_log = logging.getLogger(__name__)

BLANK_ANSWER = "Type an answer: the agent is waiting for it."
# What the inbox keeps: everything that changes state.
_Stored = Interaction | BatchInteraction | RevokeInteraction
_UNRECORDED = 503  # the listener's own answer when the inbox could not store a tap


class SlackWebhook:
    """Receives Slack interactions for one app and resolves taps through ``gate``.

    ``team_id`` pins the workspace: a tap from any other is refused even
    when its user id matches an approver's. ``on_reject`` hears why a call
    or tap was refused (``"signature"``, ``"payload"``, ``"workspace"``);
    ``on_decision`` hears the seconds from a verified tap to its recorded
    decision; ``tap_log`` is the level of a decided tap's log line
    (``_tap_log``). ``inbox`` is the app's (one is made if none is given);
    its replays of stored taps come back through :meth:`_replay`. Nothing
    here contacts Slack until a tap needs an answer or
    :meth:`start_socket_mode` is called.
    """

    def __init__(
        self,
        *,
        gate: Gate,
        signing_secret: str,
        bot_token: str,
        api_base_url: str = "https://slack.com/api/",
        team_id: str | None = None,
        timeout: float = 10.0,
        on_reject: Callable[[str], None] | None = None,
        on_decision: Callable[[float], None] | None = None,
        inbox: Inbox | None = None,
        tap_log: int | None = logging.INFO,
        links: LinkMaker | None = None,
    ) -> None:
        if not signing_secret:
            # HMAC with an empty key is a signature anyone can compute.
            raise ValueError("the Slack signing secret must not be empty")
        self._gate = gate
        self._secret = signing_secret.encode("utf-8")
        self._bot_token = bot_token
        self._timeout = timeout
        self._on_reject = on_reject
        self._tap_log = TapLog(_log, "Slack", level=tap_log, on_decision=on_decision)
        # retry_handlers=[]: a re-sent ephemeral or views.open is worse than none.
        # timeout is annotated int, but only ever handed to aiohttp.ClientTimeout(total=...).
        client_args: dict[str, Any] = {"base_url": api_base_url, "timeout": timeout}
        self._client = AsyncWebClient(token=bot_token, retry_handlers=[], **client_args)
        self._replies = SlackReplies(self._client, timeout=timeout)
        self._grants = SlackGrantTaps(gate, self._replies, team_id=team_id, timeout=timeout)
        self.commands = SlashCommands(team_id=team_id)
        """``/tapgate``'s subcommands: another surface adds its own with ``commands.add``."""
        self.commands.add("grants", self._grants.command, SUMMARY)
        self._sign_in = SlackSignIn(
            directory=gate.directory,
            replies=self._replies,
            links=links,
            team_id=team_id,
            spawn=self._own,
        )
        self.commands.add("inbox", self._sign_in.command, INBOX_SUMMARY)
        self._bolt = build_bolt(
            signing_secret=signing_secret,
            bot_token=bot_token,
            client=AsyncWebClient(retry_handlers=[], **client_args),
            logger=_log.getChild("bolt"),
            actions={
                **dict.fromkeys(SLACK_ACTIONS, self._on_action),
                **dict.fromkeys(SLACK_BATCH_ACTIONS, self._on_batch_action),
                SLACK_REVOKE_ACTION_ID: self._on_revoke,
                SLACK_EDIT_ACTION_ID: self._on_edit_action,
                INBOX_ACTION_ID: self._sign_in.open_inbox,
            },
            views={
                DENY_CALLBACK_ID: self._on_deny_submission,
                DENY_ALL_CALLBACK_ID: self._on_deny_all_submission,
                REPLY_CALLBACK_ID: self._on_reply_submission,
                EDIT_CALLBACK_ID: self._on_edit_submission,
            },
            commands={re.compile(r"^/"): self.commands.listener},  # whatever the app calls it
            refuse=self._refuse_bolt,
        )
        self._inbox = inbox or Inbox(gate)
        self._inbox.register("slack", self._replay)
        self._taps = SlackTaps(
            gate,
            self._replies,
            grants=self._grants,
            inbox=self._inbox,
            team_id=team_id,
            tap_log=self._tap_log,
            note_reject=self._note_reject,
        )
        self._tasks: set[asyncio.Task[None]] = set()
        self._socket: AsyncSocketModeHandler | None = None

    # -- HTTP and Socket Mode ---------------------------------------------------------

    async def __call__(self, request: web.Request) -> web.Response:
        """``POST /webhooks/slack``: 401 unless signed and fresh, 400 unless well-formed."""
        try:
            body = await request.read()
        except web.RequestPayloadError:  # in tapgate's app, bot/bodies.py has read it already
            _log.warning("Slack webhook refused: unreadable body")
            return self._refuse("payload", 400, "unreadable body")
        check = check_signature(
            self._secret,
            body,
            timestamp=request.headers.get(TIMESTAMP_HEADER),
            signature=request.headers.get(SIGNATURE_HEADER),
            now=self._gate.clock.now().timestamp(),
        )
        if check != "ok":
            _log.warning("Slack webhook refused: signature %s", check)
            return self._refuse("signature", 401, "invalid request")
        verified = bolt_request(body, request)
        if verified is None:
            _log.warning("Slack webhook refused: signed but malformed payload")
            return self._refuse("payload", 400, "malformed payload")
        response = await self._bolt.async_dispatch(verified)
        if response.status >= 500 and response.status != _UNRECORDED:  # bolt choked on it
            _log.warning("Slack webhook refused: bolt could not process a signed payload")
            return self._refuse("payload", 400, "malformed payload")
        return await to_aiohttp_response(response)

    async def start_socket_mode(self, app_token: str) -> None:
        """Receive interactions over Socket Mode (an ``xapp-`` token) instead of the route.

        A refused token is a :class:`~tapgate.errors.ConfigError` (see ``_slack_socket``).
        """
        if self._socket is not None:
            raise RuntimeError("Socket Mode is already running")
        self._socket = await open_socket_mode(self._bolt, self._client, app_token, self._timeout)

    def handler(self, route: str) -> Handler:
        """The one route's handler (``webhook``): this object, called with the request."""
        del route
        return self.__call__

    async def close(self) -> None:
        """Disconnect Socket Mode, then let taps in flight finish (bounded by ``timeout``)."""
        socket, self._socket = self._socket, None
        if socket is not None:
            await close_socket(socket)
        tasks = set(self._tasks)
        if not tasks:
            return
        _, pending = await asyncio.wait(tasks, timeout=self._timeout)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)

    # -- bolt listeners: store a decision, ack, work in an owned task -----------------

    async def _on_action(self, ack: AsyncAck, body: dict[str, Any]) -> BoltResponse:
        started = time.perf_counter()
        interaction = parse_action(body)
        if interaction is None:
            return self._refuse_bolt()
        if interaction.action not in ("deny", "reply"):
            return await self._record_then_ack(ack, body, interaction, started)
        response = await ack()
        ask = self._taps.ask_reason if interaction.action == "deny" else self._taps.ask_answer
        self._spawn(interaction, ask(interaction))
        return response

    async def _on_batch_action(self, ack: AsyncAck, body: dict[str, Any]) -> BoltResponse:
        started = time.perf_counter()
        interaction = parse_batch_action(body)
        if interaction is None:
            return self._refuse_bolt()
        if interaction.action != "deny_all":
            return await self._record_then_ack(ack, body, interaction, started)
        response = await ack()  # a reason first, as a single Deny
        self._spawn(interaction, self._taps.batches.ask_reason(interaction))
        return response

    async def _on_revoke(self, ack: AsyncAck, body: dict[str, Any]) -> BoltResponse:
        """A listed grant's Revoke: it changes state, so it is stored before the ack."""
        interaction = parse_revoke(body)
        if interaction is None:
            return self._refuse_bolt()
        return await self._record_then_ack(ack, body, interaction, time.perf_counter())

    async def _on_deny_all_submission(self, ack: AsyncAck, body: dict[str, Any]) -> BoltResponse:
        """The "Deny all" modal was submitted: close it at once, then deny (as a single deny)."""
        started = time.perf_counter()
        interaction = parse_deny_all_submission(body)
        if interaction is None:
            return self._refuse_bolt()
        return await self._record_then_ack(ack, body, interaction, started)

    async def _on_deny_submission(self, ack: AsyncAck, body: dict[str, Any]) -> BoltResponse:
        """The reason modal was submitted: close it at once, then deny.

        Whether the deny still applies is known only after the compare-and-set;
        a late one (decided meanwhile, expired) is told ephemerally, like a
        late tap, rather than by keeping the modal open with an error.
        """
        started = time.perf_counter()
        interaction = parse_deny_submission(body)
        if interaction is None:
            return self._refuse_bolt()
        return await self._record_then_ack(ack, body, interaction, started)

    async def _on_reply_submission(self, ack: AsyncAck, body: dict[str, Any]) -> BoltResponse:
        """A question's answer modal was submitted: a blank answer keeps it open, else answer.

        As with a deny, whether the answer still applies is known only after
        the compare-and-set, and a late one is told ephemerally.
        """
        started = time.perf_counter()
        interaction = parse_reply_submission(body)
        if interaction is None:
            return self._refuse_bolt()
        if interaction.reason is None:
            return await ack(response_action="errors", errors={ANSWER_BLOCK: BLANK_ANSWER})
        return await self._record_then_ack(ack, body, interaction, started)

    async def _on_edit_action(self, ack: AsyncAck, body: dict[str, Any]) -> BoltResponse:
        """ "Edit…" opens a modal and decides nothing: ack, then open it in an owned task."""
        interaction = parse_edit_action(body)
        if interaction is None:
            return self._refuse_bolt()
        response = await ack()
        self._spawn(interaction, self._taps.edits.open_modal(interaction))
        return response

    async def _on_edit_submission(self, ack: AsyncAck, body: dict[str, Any]) -> BoltResponse:
        """The edit modal was submitted: judged first, so a refusal stays in the modal."""
        started = time.perf_counter()
        parsed = parse_edit_submission(body)
        if parsed is None:
            return self._refuse_bolt()
        try:
            judged = await self._taps.edits.judge(*parsed)
        except Exception:  # the store failed: no 200, so Slack shows the approver an error
            _log.exception("Slack edit of %s could not be judged", parsed[0].request_id)
            return BoltResponse(status=_UNRECORDED, body={"error": "could not judge the edit"})
        if isinstance(judged, dict):
            return await ack(response_action="errors", errors=judged)
        return await self._record_then_ack(ack, body, judged, started)

    async def _record_then_ack(
        self, ack: AsyncAck, body: dict[str, Any], interaction: _Stored, started: float
    ) -> BoltResponse:
        """Store the tap, then ack, then decide in an owned task (decision
        0017-record-before-acknowledge).

        No 200 goes out unless the tap is stored: a failed INSERT is a 503,
        Slack shows the tapper an error, and their next tap is a new event.
        """
        event = _slack_inbox.event_id(body)
        try:
            await self._inbox.record("slack", [(event, _slack_inbox.encode(interaction))])
        except Exception:
            _log.exception("Slack tap on %s could not be stored", interaction.request_id)
            return BoltResponse(status=_UNRECORDED, body={"error": "could not record the tap"})
        response = await ack()
        self._spawn(interaction, self._taps.apply(interaction, event, started))
        return response

    def _replay(self, item: InboxItem) -> None:
        """A stored tap that was acknowledged and never applied: decide it now."""
        interaction = _slack_inbox.decode(item.payload)
        if interaction is None:
            _log.error("stored Slack tap %s cannot be read; left alone", item.event_id)
            return
        self._spawn(interaction, self._taps.apply(interaction, item.event_id, None))

    def _spawn(self, interaction: _Stored, work: Coroutine[Any, Any, None]) -> None:
        self._own(self._taps.guarded(interaction, work))

    def _own(self, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` in a task this webhook owns (awaited, then cancelled, on close)."""
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- refusals ---------------------------------------------------------------------

    def _note_reject(self, reason: str) -> None:
        if self._on_reject is not None:
            self._on_reject(reason)

    def _refuse(self, reason: str, status: int, error: str) -> web.Response:
        self._note_reject(reason)
        return web.json_response({"error": error}, status=status)

    def _refuse_bolt(self) -> BoltResponse:
        _log.warning("Slack interaction refused: not a tapgate tap we can read")
        self._note_reject("payload")
        return BoltResponse(status=400, body={"error": "malformed interaction"})
