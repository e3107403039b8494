"""HumanLayer-compatible endpoints under ``/humanlayer/v1``, for the unmodified ``humanlayer`` SDK.

Point the SDK at ``http://HOST:PORT/humanlayer/v1`` (``HUMANLAYER_API_BASE``)
with an agent's tapgate token as its API key. ``require_approval`` posts a
*function call*; it becomes the tool call ``spec.fn(**spec.kwargs)`` of the
token's agent, session ``run_id``, submitted through ``Gate.submit`` so the
operator's policy decides: allow and deny answer at once, ask creates the
usual request for approvers on LINE / Slack. ``human_as_tool`` posts a
*contact*; it becomes a request for :data:`~tapgate.gate.models.CONTACT_TOOL`
whose approver's typed answer is the response. A policy that allows or denies
``human_contact`` outright is a configuration error the agent hears about
(409 / 403), since no human would ever see the question.

**Where the answer to a call_id lives.** The SDK chooses ``call_id`` and then
polls ``GET /function_calls/{call_id}`` every few seconds, possibly after a
restart or on another replica. Each call is therefore a row of
``client_calls`` (see :mod:`tapgate.store.calls`), keyed by (agent,
call_id): the body as sent, and the request id, or the decision itself when
policy or a grant decided at once (such calls have no request to look up).
Deriving request ids from call ids would not do: immediate decisions have no
request, and identical pending calls share one request by design. The mapping
is written after ``Gate.submit``: concurrent creates of one call_id share the
pending request (identical calls do), and a crash in between leaves a pending
request that a retry reuses. Creating a call_id again returns its state (200);
the same id with another body is a 409. An overdue request read here is
expired on the spot, as a waiter would, so an answer never waits on the
heartbeat.

Like ``/v1``: bearer-token auth with the same constant-time lookup, an agent
sees only its own calls (anyone else's id is a 404), every response, errors
included, is JSON, and no route lets an agent answer. HumanLayer's *respond*
endpoints are refused with a 403: responses come from approvers.
"""

from __future__ import annotations

from aiohttp import hdrs, web

from tapgate.gate.models import CONTACT_TOOL, Request, Ticket, ToolCall
from tapgate.gate.overdue import as_of_now
from tapgate.server.api.humanlayer_models import (
    CONTACT,
    FUNCTION_CALL,
    FunctionCallIn,
    FunctionCallOut,
    HumanContactIn,
    HumanContactOut,
    contact_status,
    function_call_status,
    parse_call,
    stored_body,
)
from tapgate.server.api.middleware import (
    AGENT,
    json_api_middleware,
    model_response,
    read_body,
)
from tapgate.server.api.models import ApiError
from tapgate.server.keys import CLOCK, GATE, STORE
from tapgate.store.calls import ClientCall

__all__ = ["PREFIX", "setup_humanlayer"]

PREFIX = "/humanlayer/v1"
"""Where the SDK's ``HUMANLAYER_API_BASE`` points, as on HumanLayer's own service."""

_RESPOND = (
    "/agent/function_calls/{call_id}/respond",  # what the 0.7 SDK's respond_to_* post to
    "/agent/human_contacts/{call_id}/respond",
    "/function_calls/{call_id}/respond",
    "/contact_requests/{call_id}/respond",
)
_ESCALATE = (
    "/agent/function_calls/{call_id}/escalate_email",
    "/agent/human_contacts/{call_id}/escalate_email",
)
_KIND_NAMES = {FUNCTION_CALL: "function call", CONTACT: "contact request"}


def setup_humanlayer(app: web.Application) -> None:
    """Register the HumanLayer-compatible routes and their auth / JSON-error middleware."""
    app.middlewares.append(json_api_middleware(PREFIX, name="HumanLayer API"))
    router = app.router
    router.add_post(f"{PREFIX}/function_calls", create_function_call)
    router.add_get(f"{PREFIX}/function_calls/{{call_id}}", get_function_call)
    router.add_post(f"{PREFIX}/contact_requests", create_contact)
    router.add_get(f"{PREFIX}/contact_requests/{{call_id}}", get_contact)
    for path in _RESPOND:
        router.add_post(PREFIX + path, refuse_response)
    for path in _ESCALATE:
        router.add_post(PREFIX + path, refuse_escalation)


# -- function calls -----------------------------------------------------------------------


async def create_function_call(request: web.Request) -> web.Response:
    """``POST /function_calls``: policy decides now, or a request goes to approvers."""
    body = parse_call(FunctionCallIn, await read_body(request))
    existing = await _existing(request, body.call_id, FUNCTION_CALL, stored_body(body))
    if existing is not None:
        return model_response(await _function_call_out(request.app, existing))
    call = ToolCall(
        tool=body.spec.fn, arguments=body.spec.kwargs, agent=request[AGENT], session=body.run_id
    )
    ticket = await request.app[GATE].submit(call)
    stored, created = await _record(request, body, FUNCTION_CALL, ticket)
    out = await _function_call_out(request.app, stored)
    if not created:
        return model_response(out)
    return model_response(out, 201, {hdrs.LOCATION: f"{PREFIX}/function_calls/{body.call_id}"})


async def get_function_call(request: web.Request) -> web.Response:
    """``GET /function_calls/{call_id}``: the SDK polls this until ``approved`` is set."""
    call = await _own(request, FUNCTION_CALL)
    return model_response(await _function_call_out(request.app, call))


async def _function_call_out(app: web.Application, call: ClientCall) -> FunctionCallOut:
    body = FunctionCallIn.model_validate_json(call.body)
    current = await _current(app, call.request_id) if call.request_id is not None else None
    return FunctionCallOut(
        run_id=body.run_id,
        call_id=body.call_id,
        spec=body.spec,
        status=function_call_status(call, current),
    )


# -- contacts -----------------------------------------------------------------------------


async def create_contact(request: web.Request) -> web.Response:
    """``POST /contact_requests``: a ``human_contact`` request, if policy asks a human."""
    body = parse_call(HumanContactIn, await read_body(request))
    existing = await _existing(request, body.call_id, CONTACT, stored_body(body))
    if existing is not None:
        return model_response(await _contact_out(request.app, existing))
    arguments = {"message": body.spec.msg}
    if body.spec.subject is not None:
        arguments["subject"] = body.spec.subject
    call = ToolCall(
        tool=CONTACT_TOOL, arguments=arguments, agent=request[AGENT], session=body.run_id
    )
    ticket = await request.app[GATE].submit(call, question=True)
    if ticket.decision is not None:
        decision = ticket.decision
        status, code = (409, "contact_not_routed") if decision.allowed else (403, "contact_denied")
        raise ApiError(
            status,
            code,
            f"{CONTACT_TOOL!r} was {decision.status} without asking anyone ({decision.reason}); "
            f"a contact needs a policy rule with action: ask for {CONTACT_TOOL!r} "
            "and the approvers who answer",
        )
    stored, created = await _record(request, body, CONTACT, ticket)
    out = await _contact_out(request.app, stored)
    if not created:
        return model_response(out)
    return model_response(out, 201, {hdrs.LOCATION: f"{PREFIX}/contact_requests/{body.call_id}"})


async def get_contact(request: web.Request) -> web.Response:
    """``GET /contact_requests/{call_id}``: the SDK polls this until ``response`` is set."""
    call = await _own(request, CONTACT)
    return model_response(await _contact_out(request.app, call))


async def _contact_out(app: web.Application, call: ClientCall) -> HumanContactOut:
    body = HumanContactIn.model_validate_json(call.body)
    assert call.request_id is not None  # contacts decided at once are refused, never stored
    return HumanContactOut(
        run_id=body.run_id,
        call_id=body.call_id,
        spec=body.spec,
        status=contact_status(await _current(app, call.request_id)),
    )


# -- refusals -----------------------------------------------------------------------------


async def refuse_response(request: web.Request) -> web.Response:
    """HumanLayer's respond endpoints: an agent token never approves, denies or answers."""
    raise ApiError(
        403,
        "forbidden",
        "agents cannot respond to calls or contacts: responses come from approvers "
        "on LINE / Slack (or the operator's tapgate CLI)",
    )


async def refuse_escalation(request: web.Request) -> web.Response:
    """Email escalation: tapgate sends no email; the policy names who is asked."""
    raise ApiError(
        501,
        "not_implemented",
        "tapgate does not escalate by email: the policy's approvers and reminders "
        "(policy.remind_every) decide who is asked",
    )


# -- shared -------------------------------------------------------------------------------


async def _existing(request: web.Request, call_id: str, kind: str, body: str) -> ClientCall | None:
    """The call already stored under ``call_id``; a 409 if it was something else."""
    found = await request.app[STORE].calls.get(request[AGENT], call_id)
    if found is not None:
        _same(found, kind, body)
    return found


def _same(found: ClientCall, kind: str, body: str) -> None:
    if found.kind != kind:
        raise ApiError(
            409,
            "call_id_conflict",
            f"call_id {found.call_id!r} already names a {_KIND_NAMES.get(found.kind, found.kind)}",
        )
    if found.body != body:
        raise ApiError(
            409,
            "call_id_conflict",
            f"call_id {found.call_id!r} was already used with another run_id or spec",
        )


async def _record(
    request: web.Request, body: FunctionCallIn | HumanContactIn, kind: str, ticket: Ticket
) -> tuple[ClientCall, bool]:
    """Remember the call's answer under its call_id; a concurrent create may have won."""
    app = request.app
    text = stored_body(body)
    stored, created = await app[STORE].calls.add(
        ClientCall(
            agent=request[AGENT],
            call_id=body.call_id,
            kind=kind,
            body=text,
            created_at=app[CLOCK].now(),
            request_id=ticket.request_id,
            decision=ticket.decision,
        )
    )
    if not created:
        _same(stored, kind, text)
    return stored, created


async def _own(request: web.Request, kind: str) -> ClientCall:
    """The caller's own call of this kind; anyone else's is indistinguishable from none."""
    call_id = request.match_info["call_id"]
    found = await request.app[STORE].calls.get(request[AGENT], call_id)
    if found is None or found.kind != kind:
        raise ApiError(404, "not_found", f"no {_KIND_NAMES[kind]} with this call_id")
    return found


async def _current(app: web.Application, request_id: str) -> Request:
    """The request now; one past its deadline is expired here rather than left pending."""
    return await as_of_now(app[GATE], await app[GATE].get_request(request_id))
