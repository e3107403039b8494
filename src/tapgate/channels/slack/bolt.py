"""slack-bolt, fenced: the app that routes interactions, and the request it is handed.

Kept apart from ``slack.py`` (which decides what each interaction does)
because these are the workarounds for how bolt behaves (slack-bolt 1.x, read
in its source):

- ``AsyncBoltRequest`` parses the body in its constructor, before any
  middleware: with ``to_bolt_request`` unsigned bytes reach ``json.loads``,
  and signed payloads of shapes bolt does not expect end in a 500. So the
  signature is checked first, on the raw bytes, with the gate's clock, and
  what bolt cannot digest is a 400. Bolt's own check is off: it would use
  ``time.time()``, and slack_sdk's verifier raises on a non-numeric timestamp.
- Single-team authorization calls ``auth.test`` before the first listener,
  inside Slack's 3-second window; a static ``authorize`` calls nothing.
- ``process_before_response=True``: bolt awaits the listener and only then
  answers Slack, so a listener can store the tap before its ``ack``; the
  listener hands its work to a task its webhook owns.
- Socket Mode hands bolt the envelope's JSON without ``bolt_request``: what
  both transports must refuse is a global middleware (``encodes``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from re import Pattern
from typing import Any
from urllib.parse import parse_qsl

from aiohttp import web
from slack_bolt.async_app import AsyncAck, AsyncApp
from slack_bolt.authorization import AuthorizeResult
from slack_bolt.logger.messages import warning_client_prioritized_and_token_skipped
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse
from slack_sdk.web.async_client import AsyncWebClient

__all__ = ["Listener", "bolt_request", "build_bolt", "encodes"]

Listener = Callable[[AsyncAck, dict[str, Any]], Awaitable[BoltResponse]]


class _TokenUnusedFilter(logging.Filter):
    """Drops bolt's "As you gave `client` as well, `token` will be unused." warning.

    ``AsyncApp`` reads ``$SLACK_BOT_TOKEN`` when it is given no token, and the
    docs tell operators to keep the bot token in exactly that variable; bolt
    then warns that the token beside our client is unused, on every start,
    though the token reaches Slack through ``authorize`` as intended.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != warning_client_prioritized_and_token_skipped()


def build_bolt(
    *,
    signing_secret: str,
    bot_token: str,
    client: AsyncWebClient,
    logger: logging.Logger,
    actions: Mapping[str, Listener],
    views: Mapping[str, Listener],
    commands: Mapping[str | Pattern[str], Listener] | None = None,
    refuse: Callable[[], BoltResponse],
) -> AsyncApp:
    """A bolt app routing ``actions`` (by ``action_id``), ``views`` (by ``callback_id``)
    and slash ``commands`` (by name, or a pattern of names).

    ``client`` has no token: ``authorize`` supplies it per request (a token on
    the client too would only make bolt log that it ignores it). A payload no
    store can encode gets ``refuse()`` before any listener (:func:`encodes`).
    """

    # A plain function: bolt fills a bound method's ``self`` with None.
    async def authorize(enterprise_id: str | None, team_id: str | None) -> AuthorizeResult:
        return AuthorizeResult(enterprise_id=enterprise_id, team_id=team_id, bot_token=bot_token)

    if not any(isinstance(f, _TokenUnusedFilter) for f in logger.filters):
        logger.addFilter(_TokenUnusedFilter())
    bolt = AsyncApp(
        name="tapgate",
        logger=logger,
        signing_secret=signing_secret,
        client=client,
        authorize=authorize,
        request_verification_enabled=False,  # done first, on the raw bytes: see above
        process_before_response=True,
    )

    # A global middleware, so the HTTP route and Socket Mode (which hands bolt
    # the envelope's JSON without ``bolt_request``) refuse in one place.
    async def encodable_only(body: dict[str, Any], next: Callable[[], Awaitable[None]]) -> Any:
        if not encodes(body):
            return refuse()
        return await next()

    bolt.use(encodable_only)
    for action_id, listener in actions.items():
        bolt.action(action_id)(listener)
    for callback_id, listener in views.items():
        bolt.view(callback_id)(listener)
    for command, listener in (commands or {}).items():
        bolt.command(command)(listener)
    return bolt


def bolt_request(body: bytes, request: web.Request) -> AsyncBoltRequest | None:
    """What ``to_bolt_request`` builds, from the verified bytes; ``None`` if bolt cannot.

    Decoded as UTF-8 (what Slack sends) rather than with whatever charset the
    request claims, so bolt parses exactly the bytes whose signature passed.
    A slash command's form is handed over as the JSON of its fields: bolt
    takes any form body *containing* the word "payload" (a channel called
    ``#payload-alerts``, a user named ``payloadbob``) for an interaction and
    reads it as empty.
    """
    headers: dict[str, str | Sequence[str]] = dict(request.headers)
    try:
        text = body.decode("utf-8")
        if not text.startswith("{") and "payload" in text:
            form = dict(parse_qsl(text, keep_blank_values=True))
            if "payload" not in form:
                text = json.dumps(form)
        built = AsyncBoltRequest(body=text, query=request.query_string, headers=headers)
    except Exception:  # JSON, UTF-8, nesting, or bolt's context extraction on odd shapes
        return None
    return built if isinstance(built.body, dict) else None


def encodes(body: object) -> bool:
    """Whether ``body`` is text a store can write as UTF-8.

    JSON escapes can spell lone surrogates (``"\\ud800"``), which ``json.loads``
    accepts and no store can encode: a deny reason typed with one failed the
    tap's INSERT, a 503 (over Socket Mode, an unacknowledged envelope and an
    error logged) where it is a malformed payload like any other.
    """
    try:
        json.dumps(body, ensure_ascii=False).encode()
    except (UnicodeEncodeError, RecursionError):
        return False
    return True
