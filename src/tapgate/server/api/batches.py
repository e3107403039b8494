"""The batch routes: ``/v1/tool-call-batches`` (submit, long-poll, cancel).

A batch is the calls of one model turn (see :mod:`tapgate.gate.batching`):
each call's state is exactly what ``/v1/tool-calls`` would return for it,
and each call that asks stays a request of its own, readable and
cancellable at ``/v1/tool-calls/{id}``. An agent sees only its own batches;
another agent's batch id is a 404, like an unknown one.
"""

from __future__ import annotations

from aiohttp import hdrs, web

from tapgate.errors import RequestNotFound
from tapgate.gate.batching import BatchState, BatchTicket, cancel_batch, wait_batch
from tapgate.gate.models import ToolCall
from tapgate.server.api.batch_models import BatchIn, BatchOut
from tapgate.server.api.consumption import told_all
from tapgate.server.api.middleware import AGENT, model_response, read_body
from tapgate.server.api.models import (
    ApiError,
    CancelIn,
    WaitQuery,
    parse_body,
    parse_query,
    require_finite,
    tool_call_from_decision,
    tool_call_from_request,
)
from tapgate.server.api.stream import SHUTDOWN
from tapgate.server.keys import CONFIG, GATE

__all__ = ["cancel_batch_route", "get_batch", "setup_batches", "submit_batch_route"]


def setup_batches(app: web.Application) -> None:
    """Register the batch routes (behind the agent API's auth and error middleware)."""
    app.router.add_post("/v1/tool-call-batches", submit_batch_route)
    app.router.add_get("/v1/tool-call-batches/{id}", get_batch)
    app.router.add_post("/v1/tool-call-batches/{id}/cancel", cancel_batch_route)


async def submit_batch_route(request: web.Request) -> web.Response:
    """``POST /v1/tool-call-batches``: decide what can be decided now, batch the asks."""
    app = request.app
    body = parse_body(BatchIn, await read_body(request), max_wait=app[CONFIG].server.max_wait)
    for index, each in enumerate(body.calls):
        # As for a single call: NaN and infinities (which Python's JSON reads)
        # are a 400, or they would be stored as text that is not JSON.
        require_finite(each.arguments, ("calls", index, "arguments"))
    agent = request[AGENT]
    calls = [
        ToolCall(tool=c.tool, arguments=c.arguments, agent=agent, session=body.session, risk=c.risk)
        for c in body.calls
    ]
    gate = app[GATE]
    ticket = await gate.submit_many(calls)
    if body.wait and any(t.decision is None for t in ticket.tickets):
        state = await _wait(app, ticket.id, agent, body.wait)
        return await _answer(request, state, 201, use=True)
    return _submitted(ticket, calls)


def _submitted(ticket: BatchTicket, calls: list[ToolCall]) -> web.Response:
    """The 201 of a batch that did not wait: each call as its ticket says."""
    out = []
    for call, t in zip(calls, ticket.tickets, strict=True):
        if t.decision is not None:
            out.append(tool_call_from_decision(t.decision, call, consumed=t.consumed))
        else:
            assert t.request is not None
            out.append(tool_call_from_request(t.request, reused=t.reused))
    pending = any(c.decision == "pending" for c in out)
    batch = BatchOut(id=ticket.id, status="pending" if pending else "decided", calls=out)
    return model_response(batch, 201, _location(ticket.id))


def _location(batch_id: str) -> dict[str, str]:
    return {str(hdrs.LOCATION): f"/v1/tool-call-batches/{batch_id}"}


async def get_batch(request: web.Request) -> web.Response:
    """``GET /v1/tool-call-batches/{id}?wait=S``: long-polled until every call is decided."""
    app = request.app
    wait = parse_query(WaitQuery, request.query, max_wait=app[CONFIG].server.max_wait).wait
    state = await _wait(app, request.match_info["id"], request[AGENT], wait or 0.0)
    return await _answer(request, state, 200, use=wait is not None)


async def cancel_batch_route(request: web.Request) -> web.Response:
    """``POST /v1/tool-call-batches/{id}/cancel``: withdraw the still-pending calls."""
    raw = await read_body(request)
    body = parse_body(CancelIn, raw) if raw.strip() else CancelIn()
    agent = request[AGENT]
    try:
        state = await cancel_batch(
            request.app[GATE],
            request.match_info["id"],
            by=f"agent:{agent}",
            reason=body.reason,
            agent=agent,
        )
    except RequestNotFound:
        raise ApiError(404, "not_found", "no tool-call batch with this id") from None
    return await _answer(request, state, 200)


async def _wait(app: web.Application, batch_id: str, agent: str, seconds: float) -> BatchState:
    # While shutting down the wait ends at once, as for single long-polls.
    timeout = 0.0 if app[SHUTDOWN].is_set() else seconds
    try:
        return await wait_batch(app[GATE], batch_id, timeout, agent=agent)
    except RequestNotFound:
        raise ApiError(404, "not_found", "no tool-call batch with this id") from None


async def _answer(
    request: web.Request, state: BatchState, status: int, *, use: bool = False
) -> web.Response:
    """The batch's calls in order; with ``use`` (a wait), approvals read now are consumed."""
    if use:
        await told_all(request, state.requests.values())
    calls = []
    for item in state.batch.items:
        if item.request_id is None:
            assert item.decision is not None
            call = ToolCall(tool=item.tool, agent=state.batch.agent, session=state.batch.session)
            decided = item.decision
            consumed = decided.request_id if decided.status == "approved" else None
            calls.append(tool_call_from_decision(decided, call, consumed=consumed))
            continue
        current = state.requests[item.request_id]
        calls.append(tool_call_from_request(current))
    out = BatchOut(id=state.batch.id, status=state.status, calls=calls)
    return model_response(out, status, _location(state.batch.id) if status == 201 else None)
