"""The agent HTTP API under ``/v1``: submit, long-poll, cancel, list, events, sandbox, OpenAPI.

Every route but the OpenAPI document needs ``Authorization: Bearer <token>``;
the token names the agent (``Config.agent_for_token``), and an agent sees and
cancels only its own requests: another agent's id is a 404, exactly like an
unknown one, so ids are not confirmed to anyone who guesses them. No route lets
an agent token approve or deny: resolving is for approvers' webhooks and the
operator's CLI (decision 0006-identity-from-config).

Long-polls park on the gate's event-driven ``wait`` and hold no database
connection while parked; they and the SSE streams end at once when the server
shuts down, so a rolling restart never waits out a five-minute poll.
Errors under ``/v1`` (aiohttp's own 404 / 405 / 413 included) are JSON, from
the middleware both APIs share (:mod:`tapgate.server.api.middleware`); the wire
format lives in :mod:`tapgate.server.api.models`, the event stream in
:mod:`tapgate.server.api.stream`, a tool's sandbox in :mod:`tapgate.server.api.sandbox`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable

from aiohttp import hdrs, web

from tapgate.errors import RequestNotFound, ResolveError
from tapgate.gate.models import Request, ToolCall
from tapgate.gate.overdue import as_of_now
from tapgate.server.api.at_once import at_once_response
from tapgate.server.api.batches import setup_batches
from tapgate.server.api.consumption import told
from tapgate.server.api.middleware import (
    AGENT,
    json_api_middleware,
    model_response,
    read_body,
)
from tapgate.server.api.models import (
    ApiError,
    CancelIn,
    ListQuery,
    ToolCallIn,
    ToolCallList,
    WaitQuery,
    parse_body,
    parse_query,
    tool_call_from_request,
)
from tapgate.server.api.openapi import openapi_document
from tapgate.server.api.sandbox import get_tool_sandbox
from tapgate.server.api.stream import SHUTDOWN, stream_events
from tapgate.server.keys import CONFIG, GATE

__all__ = [
    "PREFIX",
    "cancel_tool_call",
    "get_openapi",
    "get_tool_call",
    "list_tool_calls",
    "setup_api",
    "submit_tool_call",
]

PREFIX = "/v1"
_PUBLIC = frozenset({"/v1/openapi.json"})


def setup_api(app: web.Application) -> None:
    """Register the agent API routes, its error middleware and its shutdown signal."""
    app[SHUTDOWN] = asyncio.Event()
    app.on_shutdown.append(_shutting_down)
    app.middlewares.append(json_api_middleware(PREFIX, public=_PUBLIC))
    app.router.add_post("/v1/tool-calls", submit_tool_call)
    app.router.add_get("/v1/tool-calls", list_tool_calls)
    app.router.add_get("/v1/tool-calls/{id}", get_tool_call)
    app.router.add_post("/v1/tool-calls/{id}/cancel", cancel_tool_call)
    setup_batches(app)
    # No HEAD: its answer would be an endless body after headers that promise none.
    app.router.add_get("/v1/events", stream_events, allow_head=False)
    # ``.+``: tool names may hold characters a plain segment stops at (the client quotes them).
    app.router.add_get("/v1/tools/{tool:.+}/sandbox", get_tool_sandbox)
    app.router.add_get("/v1/openapi.json", get_openapi)


async def _shutting_down(app: web.Application) -> None:
    # on_shutdown runs before aiohttp waits for handlers: parked polls return now.
    app[SHUTDOWN].set()
    gate = app.get(GATE)
    if gate is not None:
        gate.release_waiters()


async def _own(request: web.Request, request_id: str) -> Request:
    """The caller's own request; someone else's is indistinguishable from a missing one."""
    try:
        found = await request.app[GATE].get_request(request_id)
    except RequestNotFound:
        found = None
    if found is None or found.agent != request[AGENT]:
        raise ApiError(404, "not_found", "no tool call with this id")
    return await as_of_now(request.app[GATE], found)  # past expires_at: expired, sweep or not


def _long_poll(app: web.Application, current: Request, seconds: float | None) -> Awaitable[Request]:
    """``current`` once decided, waiting up to ``seconds`` while it is pending.

    Not a coroutine, and what it hands back holds the request's id and
    deadline only: a parked poll is the gate's frame, one future and one
    timer, not a copy of the request (its arguments, digests, the row's
    strings: ~1 KB of 10,000 polls). Shutdown releases it through
    ``Gate.release_waiters``; the decided request comes from whoever decided
    it, so the answer needs no second read.
    """
    if not seconds or not current.is_pending:
        done: asyncio.Future[Request] = asyncio.get_running_loop().create_future()
        done.set_result(current)
        return done
    # While shutting down the wait ends at once: the gate sees a zero timeout.
    timeout = 0.0 if app[SHUTDOWN].is_set() else seconds
    return app[GATE].wait_pending(current.id, current.expires_at, timeout)


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
        return at_once_response(ticket.decision, call, consumed=ticket.consumed)
    assert ticket.request is not None
    reused, waiting = ticket.reused, _long_poll(app, ticket.request, body.wait)
    del body, call, ticket  # the parked poll holds none of them (10,000 polls)
    current = await waiting
    await told(request, current)
    if reused:
        return model_response(tool_call_from_request(current, reused=True))
    location = f"{PREFIX}/tool-calls/{current.id}"
    return model_response(tool_call_from_request(current), 201, {hdrs.LOCATION: location})


async def get_tool_call(request: web.Request) -> web.Response:
    """``GET /v1/tool-calls/{id}?wait=S``: the state, long-polled while pending."""
    # Only the number outlives parsing, and the request read is handed to the
    # long-poll without a name: this frame stays parked for the whole poll.
    wait = parse_query(WaitQuery, request.query, max_wait=request.app[CONFIG].server.max_wait).wait
    current = await _long_poll(request.app, await _own(request, request.match_info["id"]), wait)
    if wait is not None:  # a long-poll is the agent waiting to run the call: it uses it
        await told(request, current)
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
    gate = request.app[GATE]
    if query.status == "decided":
        return await _decided_since(request, query)
    if query.after is not None:
        raise ApiError(400, "invalid_query", "after needs status=decided", path="after")
    found = await gate.list_requests(status=query.status, agent=request[AGENT], limit=query.limit)
    found = [await as_of_now(gate, r) for r in found]
    if query.status == "pending":  # those that expired just now are no longer pending
        found = [r for r in found if r.is_pending]
    return model_response(ToolCallList(tool_calls=[tool_call_from_request(r) for r in found]))


async def _decided_since(request: web.Request, query: ListQuery) -> web.Response:
    """``status=decided&after=CURSOR``: what was decided since the cursor, in decision order.

    The cursor is ``<decision number>.<request id>`` of the last request seen
    (``next``); without one the list starts at the oldest decision kept.
    Decision numbers follow commit order, so nothing is skipped or repeated.
    """
    after = None
    if query.after is not None:
        seq, _, ident = query.after.partition(".")
        after = (int(seq), ident)
    # A read, not a use: the non-blocking loop re-issues the call after reading
    # this, and that re-issue is what consumes the approval.
    found = await request.app[GATE].decided_since(request[AGENT], after, query.limit)
    cursor = query.after
    if found:
        last = found[-1]
        cursor = f"{last.decided_seq}.{last.id}"
    out = ToolCallList(tool_calls=[tool_call_from_request(r) for r in found], next=cursor)
    return model_response(out)


async def get_openapi(request: web.Request) -> web.Response:
    """``GET /v1/openapi.json``: public, since it describes the API and holds no data."""
    return web.json_response(openapi_document(request.app[CONFIG].server.max_wait))
