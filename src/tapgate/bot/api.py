"""The agent HTTP API under ``/v1``: submit, long-poll, cancel, list, events, OpenAPI.

Every route but the OpenAPI document needs ``Authorization: Bearer <token>``;
the token names the agent (``Config.agent_for_token``), and an agent sees and
cancels only its own requests: another agent's id is a 404, exactly like an
unknown one, so ids are not confirmed to anyone who guesses them. No route lets
an agent token approve or deny: resolving is for approvers' webhooks and the
operator's CLI (DESIGN decision 6).

Long-polls park on the gate's event-driven ``wait`` and hold no database
connection while parked; they and the SSE streams end at once when the server
shuts down, so a rolling restart never waits out a five-minute poll.
Errors under ``/v1`` (aiohttp's own 404 / 405 / 413 included) are JSON, from
one middleware; the wire format lives in :mod:`tapgate.bot._api_models`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

import sqlalchemy.exc
from aiohttp import hdrs, web
from aiohttp.typedefs import Middleware
from pydantic import BaseModel

from tapgate.bot._api_models import (
    ApiError,
    CancelIn,
    ListQuery,
    ToolCallIn,
    ToolCallList,
    WaitQuery,
    event_out,
    parse_body,
    parse_query,
    tool_call_from_decision,
    tool_call_from_request,
)
from tapgate.bot.keys import CLOCK, CONFIG, GATE, STORE
from tapgate.bot.openapi import openapi_document
from tapgate.core.events import Subscription
from tapgate.core.models import GateEvent, Request, ToolCall
from tapgate.errors import RequestNotFound, ResolveError

__all__ = [
    "AGENT",
    "HEARTBEAT_INTERVAL",
    "STREAM_END_TIMEOUT",
    "STREAM_QUEUE_SIZE",
    "STREAM_WRITE_TIMEOUT",
    "authenticate",
    "json_api_middleware",
    "model_response",
    "read_body",
    "setup_api",
]

log = logging.getLogger(__name__)

AGENT = web.RequestKey("tapgate.agent", str)
"""The authenticated agent's name, set on every ``/v1`` request but the OpenAPI document."""

HEARTBEAT_INTERVAL = 15.0
"""Seconds between SSE comment lines: keeps proxies from closing a quiet stream."""

STREAM_QUEUE_SIZE = 256
"""Events buffered per SSE client; a client that falls further behind loses the oldest."""

_BEAT = timedelta(seconds=HEARTBEAT_INTERVAL)
STREAM_WRITE_TIMEOUT = 30.0
"""Seconds one SSE write may wait for a client that does not read, before it is dropped."""
STREAM_END_TIMEOUT = 1.0
"""Seconds the end of an SSE stream may wait for the client before the connection is dropped."""
_SHUTDOWN = web.AppKey("tapgate.api_shutdown", asyncio.Event)
_PREFIX = "/v1"
_PUBLIC = frozenset({"/v1/openapi.json"})
_MAX_TOKEN = 1024  # longer than any configured token: refuse before comparing
_CHALLENGE = 'Bearer realm="tapgate"'
_HTTP_CODES = {
    400: "bad_request",
    404: "not_found",
    405: "method_not_allowed",
    413: "payload_too_large",
}

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def setup_api(app: web.Application) -> None:
    """Register the agent API routes, its error middleware and its shutdown signal."""
    app[_SHUTDOWN] = asyncio.Event()
    app.on_shutdown.append(_shutting_down)
    app.middlewares.append(json_api_middleware(_PREFIX, public=_PUBLIC))
    app.router.add_post("/v1/tool-calls", submit_tool_call)
    app.router.add_get("/v1/tool-calls", list_tool_calls)
    app.router.add_get("/v1/tool-calls/{id}", get_tool_call)
    app.router.add_post("/v1/tool-calls/{id}/cancel", cancel_tool_call)
    # No HEAD: its answer would be an endless body after headers that promise none.
    app.router.add_get("/v1/events", stream_events, allow_head=False)
    app.router.add_get("/v1/openapi.json", get_openapi)


async def _shutting_down(app: web.Application) -> None:
    # on_shutdown runs before aiohttp waits for handlers: parked polls return now.
    app[_SHUTDOWN].set()
    gate = app.get(GATE)
    if gate is not None:
        gate.release_waiters()


# -- plumbing ---------------------------------------------------------------------------


def json_api_middleware(
    prefix: str, *, public: frozenset[str] = frozenset(), name: str = "agent API"
) -> Middleware:
    """Authenticate requests under ``prefix`` and render every error there as JSON.

    Shared by ``/v1`` and the HumanLayer-compatible API so that both make the
    very same token check and answer failures (aiohttp's own 404 / 405 / 413
    and a database outage included) in the same shape. ``public`` paths skip
    authentication.
    """

    async def guarded(request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            if request.path not in public:
                request[AGENT] = authenticate(request)
            return await handler(request)
        except ApiError as exc:
            return _error_response(exc)
        except web.HTTPException as exc:
            if exc.status < 400:
                raise
            code = _HTTP_CODES.get(exc.status, f"http_{exc.status}")
            headers = {k: v for k, v in exc.headers.items() if k == hdrs.ALLOW}
            return _error_response(ApiError(exc.status, code, exc.reason, headers=headers))
        except Exception as exc:
            if _database_unavailable(exc):
                # An outage, not a bug: one line, and a status the client retries.
                log.warning(
                    "%s: database unavailable on %s %s: %r", name, request.method, request.path, exc
                )
                unavailable = ApiError(
                    503,
                    "unavailable",
                    "database unavailable; retry",
                    headers={hdrs.RETRY_AFTER: "1"},
                )
                return _error_response(unavailable)
            log.exception("%s: unexpected error on %s %s", name, request.method, request.path)
            return _error_response(ApiError(500, "internal", "internal error; see the server log"))

    @web.middleware  # marks it new-style; it need not be a coroutine function itself
    def middleware(request: web.Request, handler: Handler) -> Awaitable[web.StreamResponse]:
        # Not a coroutine itself: a request outside ``prefix`` (a webhook, a
        # long-poll of the other API) goes straight to its handler without a
        # frame of ours parked for its whole life (10,000 long-polls, ~1 KB each).
        if request.path != prefix and not request.path.startswith(prefix + "/"):
            return handler(request)
        return guarded(request, handler)

    return middleware


_UNAVAILABLE_SQLSTATES = frozenset({"57P01", "57P02", "57P03", "53300"})
"""Admin / crash shutdown, "cannot connect now" (starting up), too many connections."""


def _database_unavailable(exc: BaseException) -> bool:
    """Whether ``exc`` means the database cannot be reached (PostgreSQL down or restarting).

    Deliberately narrow: a schema or query bug (SQLite's "no such table" is an
    ``OperationalError`` too) must stay a logged 500, not a 503 that clients
    retry for ever.
    """
    if isinstance(exc, ConnectionError | TimeoutError | sqlalchemy.exc.TimeoutError):
        return True  # refused / reset connections, connect timeouts, an exhausted pool
    if isinstance(exc, OSError) and "Connect call failed" in str(exc):
        return True  # asyncio's summary when every address of the host refused
    if not isinstance(exc, sqlalchemy.exc.DBAPIError):
        return False
    if exc.connection_invalidated or isinstance(exc, sqlalchemy.exc.InterfaceError):
        return True
    code = getattr(exc.orig, "sqlstate", None) or getattr(exc.orig, "pgcode", None)
    if isinstance(code, str) and (code.startswith("08") or code in _UNAVAILABLE_SQLSTATES):
        return True  # SQLSTATE class 08: connection exceptions
    return "database is locked" in str(exc.orig)


def authenticate(request: web.Request) -> str:
    """The agent named by the bearer token, or a 401 that tells nothing about near misses."""
    scheme, _, token = request.headers.get(hdrs.AUTHORIZATION, "").partition(" ")
    token = token.strip(" ")
    if scheme.lower() != "bearer" or not token:
        raise ApiError(
            401, "unauthorized", "missing bearer token", headers={hdrs.WWW_AUTHENTICATE: _CHALLENGE}
        )
    agent = None
    if len(token) <= _MAX_TOKEN and _encodable(token):
        agent = request.app[CONFIG].agent_for_token(token)
    if agent is None:
        raise ApiError(
            401,
            "unauthorized",
            "invalid bearer token",
            headers={hdrs.WWW_AUTHENTICATE: f'{_CHALLENGE}, error="invalid_token"'},
        )
    return agent


def _encodable(token: str) -> bool:
    # Header bytes that are not UTF-8 arrive as surrogates, which .encode() refuses.
    try:
        token.encode()
    except UnicodeEncodeError:
        return False
    return True


def _error_response(exc: ApiError) -> web.Response:
    return web.json_response(text=exc.json(), status=exc.status, headers=exc.headers)


def model_response(
    model: BaseModel, status: int = 200, headers: dict[str, str] | None = None
) -> web.Response:
    """``model`` as the JSON body, serialised by pydantic (one pass, no dict in between)."""
    return web.json_response(text=model.model_dump_json(), status=status, headers=headers)


async def read_body(request: web.Request) -> bytes:
    """The raw body; one that cannot be decoded (a bad gzip stream) is the client's 400."""
    try:
        return await request.read()
    except web.RequestPayloadError:
        raise ApiError(400, "unreadable_body", "the body could not be read or decoded") from None


async def _own(request: web.Request, request_id: str) -> Request:
    """The caller's own request; someone else's is indistinguishable from a missing one."""
    try:
        found = await request.app[GATE].get_request(request_id)
    except RequestNotFound:
        found = None
    if found is None or found.agent != request[AGENT]:
        raise ApiError(404, "not_found", "no tool call with this id")
    return found


def _long_poll(app: web.Application, pending: Request, seconds: float) -> Awaitable[Request]:
    """Park until the request is decided, ``seconds`` pass, or the server shuts down.

    The handler awaits the gate directly: a parked poll is one future and one
    timer (no helper tasks, and no coroutine frame of this function: it hands
    back the gate's own awaitable), and shutdown releases it through
    ``Gate.release_waiters``. The decided request comes from whoever decided
    it, so the answer needs no second read.
    """
    # While shutting down the wait ends at once: the gate sees a zero timeout.
    timeout = 0.0 if app[_SHUTDOWN].is_set() else seconds
    return app[GATE].wait_for(pending.id, timeout=timeout, known=pending)


# -- handlers ---------------------------------------------------------------------------


async def submit_tool_call(request: web.Request) -> web.Response:
    """``POST /v1/tool-calls``: decide now, or create (reuse) a request and maybe wait."""
    app = request.app
    body = parse_body(ToolCallIn, await read_body(request), max_wait=app[CONFIG].server.max_wait)
    call = ToolCall(
        tool=body.tool,
        arguments=body.arguments,
        agent=request[AGENT],
        session=body.session,
        risk=body.risk,
    )
    ticket = await app[GATE].submit(call)
    if ticket.decision is not None:  # counted by the metrics from the gate's at-once event
        return model_response(tool_call_from_decision(ticket.decision, call))
    assert ticket.request is not None
    current = ticket.request
    if body.wait and current.is_pending:
        current = await _long_poll(app, current, body.wait)
    if ticket.reused:
        return model_response(tool_call_from_request(current, reused=True))
    location = f"{_PREFIX}/tool-calls/{current.id}"
    return model_response(tool_call_from_request(current), 201, {hdrs.LOCATION: location})


async def get_tool_call(request: web.Request) -> web.Response:
    """``GET /v1/tool-calls/{id}?wait=S``: the state, long-polled while pending."""
    # Only the number outlives parsing: this frame stays parked for the whole poll.
    wait = parse_query(WaitQuery, request.query, max_wait=request.app[CONFIG].server.max_wait).wait
    current = await _own(request, request.match_info["id"])
    if wait and current.is_pending:
        current = await _long_poll(request.app, current, wait)
    return model_response(tool_call_from_request(current))


async def cancel_tool_call(request: web.Request) -> web.Response:
    """``POST /v1/tool-calls/{id}/cancel``: withdraw a pending request; 409 once decided."""
    raw = await read_body(request)
    body = parse_body(CancelIn, raw) if raw.strip() else CancelIn()
    current = await _own(request, request.match_info["id"])
    gate = request.app[GATE]
    try:
        cancelled = await gate.cancel(current.id, by=f"agent:{request[AGENT]}", reason=body.reason)
    except ResolveError:
        latest = await gate.get_request(current.id)
        raise ApiError(
            409,
            "already_decided",
            f"the tool call is already {latest.status}",
            tool_call=tool_call_from_request(latest),
        ) from None
    return model_response(tool_call_from_request(cancelled))


async def list_tool_calls(request: web.Request) -> web.Response:
    """``GET /v1/tool-calls?status=&limit=``: the caller's requests only, newest first."""
    query = parse_query(ListQuery, request.query)
    found = await request.app[STORE].list_requests(
        status=query.status, agent=request[AGENT], limit=query.limit
    )
    return model_response(ToolCallList(tool_calls=[tool_call_from_request(r) for r in found]))


async def get_openapi(request: web.Request) -> web.Response:
    """``GET /v1/openapi.json``: public, since it describes the API and holds no data."""
    return web.json_response(openapi_document(request.app[CONFIG].server.max_wait))


async def stream_events(request: web.Request) -> web.StreamResponse:
    """``GET /v1/events``: server-sent events about the caller's own requests."""
    response = web.StreamResponse(
        headers={
            hdrs.CONTENT_TYPE: "text/event-stream",
            hdrs.CACHE_CONTROL: "no-cache",
            "X-Accel-Buffering": "no",  # nginx would otherwise buffer the stream
        }
    )
    agent = request[AGENT]
    # Subscribe before the headers go out, so no event falls between the two;
    # only this agent's events are queued (see core.events.Subscription).
    bus = request.app[GATE].bus
    async with bus.stream(STREAM_QUEUE_SIZE, lambda e: e.request.agent == agent) as events:
        await response.prepare(request)
        stopper = asyncio.ensure_future(request.app[_SHUTDOWN].wait())
        try:
            if await _send(request, response, b": connected\n\n", stopper):
                await _pump(request, response, events, stopper)
            await _end(request, response)
        except ConnectionError:
            pass  # the client went away (reset, or "Connection lost" while draining)
        except Exception:  # the headers are out: the stream can only end, not turn into a 500
            log.exception("agent API: event stream for %s failed", agent)
        finally:
            stopper.cancel()
    return response


async def _end(request: web.Request, response: web.StreamResponse) -> None:
    """Finish the stream, or drop the connection if the client does not take the end.

    aiohttp would otherwise ``write_eof`` after the handler with no time
    limit, waiting for a client that stopped reading to drain its buffers:
    that held a server's shutdown for ~30 s.
    """
    try:
        await asyncio.wait_for(response.write_eof(), STREAM_END_TIMEOUT)
    except TimeoutError:
        if request.transport is not None:
            request.transport.abort()


async def _pump(
    request: web.Request,
    response: web.StreamResponse,
    events: Subscription,
    stopper: asyncio.Future[Any],
) -> None:
    """Forward the agent's events, beat every ``HEARTBEAT_INTERVAL``, stop at shutdown.

    A client that fell so far behind that events were lost is told so with
    an ``overflow`` event and the stream ends: it must re-read what it waits
    for rather than trust a stream with a gap.
    """
    clock = request.app[CLOCK]
    getter: asyncio.Future[GateEvent] | None = None
    next_beat = clock.now() + _BEAT
    try:
        while True:
            getter = getter or asyncio.ensure_future(events.queue.get())
            beat = asyncio.ensure_future(clock.sleep_until(next_beat))
            racers: set[asyncio.Future[Any]] = {stopper, getter, beat}
            try:
                await asyncio.wait(racers, return_when=asyncio.FIRST_COMPLETED)
            finally:
                beat.cancel()
            if stopper.done():
                return
            if events.dropped:
                frame = f'event: overflow\ndata: {{"dropped": {events.dropped}}}\n\n'.encode()
                await _send(request, response, frame, stopper)
                return
            if getter.done():
                event, getter = getter.result(), None
                frame = _frame(event)
            else:
                frame = b": heartbeat\n\n"
                next_beat = clock.now() + _BEAT
            if not await _send(request, response, frame, stopper):
                return
    finally:
        if getter is not None:
            getter.cancel()


async def _send(
    request: web.Request, response: web.StreamResponse, frame: bytes, stopper: asyncio.Future[Any]
) -> bool:
    """Write one frame; False, with the connection dropped, if the client stalls or we stop.

    A client that stops reading makes ``write`` wait for ever once the socket
    buffers fill. Racing the write against shutdown keeps SIGTERM prompt, and
    ``STREAM_WRITE_TIMEOUT`` frees a stalled client's connection; aborting
    the transport is the only way out (a graceful end would wait to drain).
    """
    write = asyncio.ensure_future(response.write(frame))
    try:
        await asyncio.wait(
            {write, stopper}, timeout=STREAM_WRITE_TIMEOUT, return_when=asyncio.FIRST_COMPLETED
        )
        if write.done():
            write.result()  # a client that went away raises a ConnectionError here
            return True
    finally:
        write.cancel()  # no-op when done; never orphaned if we are cancelled
    if request.transport is not None:
        request.transport.abort()
    if not stopper.done():
        log.info("agent API: event stream for %s dropped (client not reading)", request[AGENT])
    return False


def _frame(event: GateEvent) -> bytes:
    # model_dump_json escapes newlines inside strings, so the data stays on one line.
    return f"event: {event.kind}\ndata: {event_out(event).model_dump_json()}\n\n".encode()
