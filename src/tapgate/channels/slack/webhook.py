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
stores and acknowledges (each listener in :mod:`.listeners`); ``_slack_taps``
does the work after the ack, in tasks owned here. A decided request's message
is rewritten by the outbox dispatcher (every message of the request, on every
channel), so a successful tap needs no answer here; a refused or late one gets
an ephemeral sentence.

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
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response
from slack_sdk.web.async_client import AsyncWebClient

from tapgate.channels.contract import Handler
from tapgate.channels.slack.bolt import bolt_request, build_bolt
from tapgate.channels.slack.commands import SlashCommands
from tapgate.channels.slack.grants import SUMMARY, SlackGrantTaps
from tapgate.channels.slack.listeners import UNRECORDED, SlackListeners
from tapgate.channels.slack.payloads import (
    DENY_ALL_CALLBACK_ID,
    DENY_CALLBACK_ID,
    EDIT_CALLBACK_ID,
    REPLY_CALLBACK_ID,
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
from tapgate.decisions.webhook_inbox import Inbox
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


class SlackWebhook(SlackListeners):
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
        if response.status >= 500 and response.status != UNRECORDED:  # bolt choked on it
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

    # -- refusals ---------------------------------------------------------------------

    def _refuse(self, reason: str, status: int, error: str) -> web.Response:
        self._note_reject(reason)
        return web.json_response({"error": error}, status=status)
