"""The OpenAPI 3.1 document of the agent API, served at ``GET /v1/openapi.json``.

Schemas are generated from the pydantic models the handlers validate and
serialise with (:mod:`tapgate.server.api.models`), so a field added there shows up
here; the operations are written out by hand because they carry the prose a
client author needs. Tool calls and batches are resources of one shape
(submit, long-poll, cancel), so :func:`_resource` writes that shape once and
each says only its prose. The examples are data, in
:mod:`tapgate.server.api.openapi_examples`. A test checks that every ``/v1``
route is documented, that nothing else is, and that the examples validate
against the models.
"""

from __future__ import annotations

import copy
from functools import lru_cache
from typing import Any

from pydantic.json_schema import models_json_schema

from tapgate import __version__
from tapgate.server.api.batch_models import BatchCallIn, BatchIn, BatchOut
from tapgate.server.api.events import EventOut
from tapgate.server.api.models import (
    CancelIn,
    ErrorOut,
    ListQuery,
    SandboxOut,
    ToolCallIn,
    ToolCallList,
    ToolCallOut,
    WaitQuery,
)
from tapgate.server.api.openapi_examples import EXAMPLES

__all__ = ["EXAMPLES", "openapi_document"]

_REF = "#/components/schemas/{model}"

_ERRORS = {
    "400": "A malformed body or query: invalid JSON, a wrong type, an unknown field, "
    "or `wait` out of range. `error.path` names the field.",
    "401": "No `Authorization: Bearer <token>` header, or an unknown token.",
    "404": "No such tool call, or it belongs to another agent (the two are not told apart).",
    "409": "The tool call is already decided; `tool_call` holds its current state.",
    "413": "The body is larger than the server accepts (1 MB).",
    "429": "The agent is over `max_pending` or `asks_per_minute` (see `agents[]` in the "
    "configuration): nothing was created and nobody was asked; retry after `Retry-After`.",
}


def openapi_document(max_wait: float) -> dict[str, Any]:
    """The document for a server whose ``server.max_wait`` is ``max_wait`` seconds."""
    return copy.deepcopy(_document(float(max_wait)))


@lru_cache(maxsize=8)
def _document(max_wait: float) -> dict[str, Any]:
    _, top = models_json_schema(
        [
            (ToolCallIn, "validation"),
            (CancelIn, "validation"),
            (ToolCallOut, "serialization"),
            (ToolCallList, "serialization"),
            (ErrorOut, "serialization"),
            (EventOut, "serialization"),
            (SandboxOut, "serialization"),
            (BatchCallIn, "validation"),
            (BatchIn, "validation"),
            (BatchOut, "serialization"),
        ],
        ref_template=_REF,
    )
    schemas: dict[str, Any] = top["$defs"]
    _cap_wait(schemas["ToolCallIn"]["properties"]["wait"], max_wait)
    _cap_wait(schemas["BatchIn"]["properties"]["wait"], max_wait)
    for name, example in EXAMPLES.items():
        schemas[name]["examples"] = [example]
    for schema in schemas.values():
        if "description" in schema:  # docstrings are reST; OpenAPI renders Markdown
            schema["description"] = schema["description"].replace("``", "`")
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "tapgate agent API",
            "version": __version__,
            "description": "Submit tool calls for approval, wait for the decision, cancel, "
            "and follow events. Agent tokens can never approve or deny.",
        },
        "security": [{"bearer": []}],
        "paths": _paths(max_wait),
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "responses": {code: _error(code, text) for code, text in _ERRORS.items()},
        },
    }


def _cap_wait(schema: dict[str, Any], max_wait: float) -> None:
    # The limit is config, so the model cannot carry it; the number branch gets it here.
    for branch in schema.get("anyOf", [schema]):
        if branch.get("type") == "number":
            branch["maximum"] = max_wait


def _paths(max_wait: float) -> dict[str, Any]:
    wait = _query_parameters(WaitQuery)
    for parameter in wait:
        _cap_wait(parameter["schema"], max_wait)
    call_id = {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
    paths = {
        **_resource(
            "/v1/tool-calls",
            "ToolCall",
            model="ToolCall",
            call_id=call_id,
            wait=wait,
            submit="Submit a tool call; with `wait`, hold the response until it is decided.",
            submitted={
                "200": "Decided at once, or an identical request reused",
                "201": "A new request was created (see `Location`)",
            },
            get="A request's state; with `wait`, long-poll until it is decided.",
            got="The request",
            cancel="Withdraw a pending request (the body is optional).",
            cancelled="The cancelled request",
            cancel_errors=("400", "401", "404", "409", "413"),
        ),
        **_resource(
            "/v1/tool-call-batches",
            "ToolCallBatch",
            model="Batch",
            call_id=call_id,
            wait=wait,
            submit="Submit the tool calls of one model turn (1 to 50): each is decided at once "
            "or becomes a request; the requests form one batch, shown to approvers as one "
            "card. With `wait`, hold the response until every call is decided.",
            submitted={"201": "The batch (see `Location`)"},
            get="A batch's calls in order; with `wait`, long-poll until every call is decided.",
            got="The batch",
            cancel="Withdraw every still-pending call of the batch; decided calls stay decided.",
            cancelled="The batch after cancelling",
            # No 409: cancelling a decided batch answers 200 with the batch as it is.
            cancel_errors=("400", "401", "404", "413"),
        ),
        "/v1/events": {"get": _events()},
        "/v1/tools/{tool}/sandbox": {
            "get": _operation(
                "getToolSandbox",
                "What `tapgate run --sandbox` lets the tool's commands do: network, writable "
                "and hidden paths, from the tool's config (defaults when it has none).",
                parameters=[
                    {"name": "tool", "in": "path", "required": True, "schema": {"type": "string"}}
                ],
                ok={"200": ("SandboxOut", "The tool's sandbox")},
                errors=("401",),
            ),
        },
        "/v1/openapi.json": {
            "get": {
                "operationId": "getOpenApi",
                "summary": "This document.",
                "security": [],
                "responses": {
                    "200": {
                        "description": "The OpenAPI document",
                        "content": {"application/json": {"schema": {"type": "object"}}},
                    }
                },
            }
        },
    }
    # Only the tool calls are listed; the collection's "post" stays first.
    paths["/v1/tool-calls"]["get"] = _operation(
        "listToolCalls",
        "The calling agent's requests, newest first; with `status=decided`, the "
        "requests decided after the `after` cursor, in decision order, and `next`.",
        parameters=_query_parameters(ListQuery),
        ok={"200": ("ToolCallList", "The requests")},
        errors=("400", "401"),
    )
    return paths


def _resource(
    path: str,
    name: str,
    *,
    model: str,
    call_id: dict[str, Any],
    wait: list[dict[str, Any]],
    submit: str,
    submitted: dict[str, str],
    get: str,
    got: str,
    cancel: str,
    cancelled: str,
    cancel_errors: tuple[str, ...],
) -> dict[str, Any]:
    """The submit, long-poll and cancel operations of ``path``, ``path/{id}`` and its cancel.

    Tool calls and batches are the same kind of resource (``<model>In`` posted,
    ``<model>Out`` read back by id with ``wait``, cancelled by id), so the shape
    is written once and each route says only its prose, its success statuses
    (``submitted``: status → description) and its cancel errors. ``name`` makes
    the operation ids: ``submit<name>``, ``get<name>``, ``cancel<name>``.
    """
    out = f"{model}Out"
    return {
        path: {
            "post": _operation(
                f"submit{name}",
                submit,
                body=(f"{model}In", True),
                ok={status: (out, text) for status, text in submitted.items()},
                errors=("400", "401", "413", "429"),
            ),
        },
        f"{path}/{{id}}": {
            "get": _operation(
                f"get{name}",
                get,
                parameters=[call_id, *wait],
                ok={"200": (out, got)},
                errors=("400", "401", "404"),
            ),
        },
        f"{path}/{{id}}/cancel": {
            "post": _operation(
                f"cancel{name}",
                cancel,
                parameters=[call_id],
                body=("CancelIn", False),
                ok={"200": (out, cancelled)},
                errors=cancel_errors,
            ),
        },
    }


def _operation(
    operation_id: str,
    summary: str,
    *,
    ok: dict[str, tuple[str, str]],
    errors: tuple[str, ...],
    parameters: list[dict[str, Any]] | None = None,
    body: tuple[str, bool] | None = None,
) -> dict[str, Any]:
    responses: dict[str, Any] = {
        status: {"description": text, "content": _json(schema)}
        for status, (schema, text) in ok.items()
    }
    if "201" in responses:
        responses["201"]["headers"] = {
            "Location": {"schema": {"type": "string"}, "description": "The request's URL"}
        }
    responses.update({code: {"$ref": f"#/components/responses/{code}"} for code in errors})
    operation: dict[str, Any] = {
        "operationId": operation_id,
        "summary": summary,
        "responses": responses,
    }
    if parameters:
        operation["parameters"] = parameters
    if body is not None:
        name, required = body
        operation["requestBody"] = {"required": required, "content": _json(name)}
    return operation


def _events() -> dict[str, Any]:
    return {
        "operationId": "streamEvents",
        "summary": "Server-sent events about the calling agent's requests.",
        "description": "Each event has `event: <kind>` and one line of `data:` holding an "
        "`EventOut` JSON object (kinds: requested, notified, resolved, expired, cancelled). "
        "A comment line is sent every 15 seconds; the stream ends when the server shuts "
        "down. A client that falls more than 256 events behind is sent `event: overflow` "
        'with `data: {"dropped": N}` and the stream ends; one that stops reading is dropped '
        "after 30 seconds. Re-read the state with `GET /v1/tool-calls/{id}` after "
        "reconnecting.",
        "responses": {
            "200": {
                "description": "The event stream",
                "content": {
                    "text/event-stream": {
                        "schema": {"type": "string"},
                        "x-event-data": {"$ref": _REF.format(model="EventOut")},
                    }
                },
            },
            "401": {"$ref": "#/components/responses/401"},
        },
    }


def _query_parameters(model: type[WaitQuery | ListQuery]) -> list[dict[str, Any]]:
    schema = model.model_json_schema()
    return [
        {"name": name, "in": "query", "required": False, "schema": _query_schema(prop)}
        for name, prop in schema["properties"].items()
    ]


def _query_schema(schema: dict[str, Any]) -> dict[str, Any]:
    # A query parameter is absent rather than null: keep the one non-null branch.
    out = {k: v for k, v in schema.items() if k not in ("title", "anyOf", "default")}
    branches = [b for b in schema.get("anyOf", []) if b.get("type") != "null"]
    if len(branches) == 1:
        out.update(branches[0])
    if schema.get("default") is not None:
        out["default"] = schema["default"]
    return out


def _json(schema: str) -> dict[str, Any]:
    return {"application/json": {"schema": {"$ref": _REF.format(model=schema)}}}


def _error(code: str, description: str) -> dict[str, Any]:
    response: dict[str, Any] = {"description": description, "content": _json("ErrorOut")}
    if code == "401":
        response["headers"] = {
            "WWW-Authenticate": {"schema": {"type": "string"}, "description": "`Bearer ...`"}
        }
    return response
