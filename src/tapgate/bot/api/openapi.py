"""The OpenAPI 3.1 document of the agent API, served at ``GET /v1/openapi.json``.

Schemas are generated from the pydantic models the handlers validate and
serialise with (:mod:`tapgate.bot.api.models`), so a field added there shows up
here; the operations are written out by hand because they carry the prose a
client author needs. A test checks that every ``/v1`` route is documented,
that nothing else is, and that the examples validate against the models.
"""

from __future__ import annotations

import copy
from functools import lru_cache
from typing import Any

from pydantic.json_schema import models_json_schema

from tapgate import __version__
from tapgate.bot.api.batch_models import BatchCallIn, BatchIn, BatchOut
from tapgate.bot.api.events import EventOut
from tapgate.bot.api.models import (
    CancelIn,
    ErrorOut,
    ListQuery,
    SandboxOut,
    ToolCallIn,
    ToolCallList,
    ToolCallOut,
    WaitQuery,
)

__all__ = ["EXAMPLES", "openapi_document"]

_REF = "#/components/schemas/{model}"

EXAMPLES: dict[str, dict[str, Any]] = {
    "ToolCallIn": {
        "tool": "deploy",
        "arguments": {"service": "web", "env": "prod"},
        "session": "chat-42",
        "wait": 30,
    },
    "CancelIn": {"reason": "the user changed their mind"},
    "ToolCallOut": {
        "id": "kq3V2m9yJ0x8b7cP1sQ4Ag",
        "decision": "allow",
        "status": "approved",
        "reason": "approved by alice",
        "decided_by": "alice",
        "source": "approver",
        "rule": "policy.rules[0]",
        "reused": False,
        "tool": "deploy",
        "session": "chat-42",
        "created_at": "2026-01-01T12:00:00Z",
        "expires_at": "2026-01-01T12:10:00Z",
        "resolved_at": "2026-01-01T12:00:21Z",
        "approvers": ["alice", "bob"],
        "edited": True,
        "arguments": {"service": "web", "env": "staging"},
    },
    "ErrorOut": {
        "error": {
            "code": "invalid_body",
            "message": "Input should be a valid string",
            "path": "tool",
        }
    },
    "EventOut": {
        "kind": "resolved",
        "request_id": "kq3V2m9yJ0x8b7cP1sQ4Ag",
        "status": "approved",
        "decision": "allow",
        "tool": "deploy",
        "arguments": {"service": "web", "env": "prod", "token": "********"},
        "risk": "write",
        "agent": "ci-bot",
        "session": "chat-42",
        "batch_id": None,
        "at": "2026-01-01T12:00:21Z",
        "outcome": "approved",
        "decided_by": "alice",
        "reason": "approved by alice",
        "channel": None,
        "approver": None,
    },
    "SandboxOut": {
        "tool": "deploy",
        "network": False,
        "writable": ["/srv/app/releases", "."],
        "hidden": ["/root/.ssh"],
        "source": "policy.tools.deploy.sandbox",
    },
    "BatchCallIn": {"tool": "read_file", "arguments": {"path": "README.md"}},
    "BatchIn": {
        "calls": [
            {"tool": "read_file", "arguments": {"path": "README.md"}},
            {"tool": "deploy", "arguments": {"service": "web", "env": "prod"}},
        ],
        "session": "chat-42",
        "wait": 30,
    },
    "BatchOut": {
        "id": "Zt8cM1qV0aY7dN3bK5wL2g",
        "status": "pending",
        "calls": [
            {
                "id": None,
                "decision": "allow",
                "status": "allowed",
                "reason": "read_only tools are allowed",
                "decided_by": "policy.tools.read_file",
                "source": "policy",
                "rule": "policy.tools.read_file",
                "reused": False,
                "tool": "read_file",
                "session": "chat-42",
                "created_at": None,
                "expires_at": None,
                "resolved_at": None,
                "approvers": [],
            },
            {
                "id": "kq3V2m9yJ0x8b7cP1sQ4Ag",
                "decision": "pending",
                "status": "pending",
                "reason": "deploys need a human",
                "decided_by": None,
                "source": None,
                "rule": "policy.rules[0]",
                "reused": False,
                "tool": "deploy",
                "session": "chat-42",
                "created_at": "2026-01-01T12:00:00Z",
                "expires_at": "2026-01-01T12:10:00Z",
                "resolved_at": None,
                "approvers": ["alice", "bob"],
                "batch_id": "Zt8cM1qV0aY7dN3bK5wL2g",
            },
        ],
    },
}
"""One example per schema; the OpenAPI test validates each against its model."""

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
    return {
        "/v1/tool-calls": {
            "post": _operation(
                "submitToolCall",
                "Submit a tool call; with `wait`, hold the response until it is decided.",
                body=("ToolCallIn", True),
                ok={
                    "200": ("ToolCallOut", "Decided at once, or an identical request reused"),
                    "201": ("ToolCallOut", "A new request was created (see `Location`)"),
                },
                errors=("400", "401", "413", "429"),
            ),
            "get": _operation(
                "listToolCalls",
                "The calling agent's requests, newest first; with `status=decided`, the "
                "requests decided after the `after` cursor, in decision order, and `next`.",
                parameters=_query_parameters(ListQuery),
                ok={"200": ("ToolCallList", "The requests")},
                errors=("400", "401"),
            ),
        },
        "/v1/tool-calls/{id}": {
            "get": _operation(
                "getToolCall",
                "A request's state; with `wait`, long-poll until it is decided.",
                parameters=[call_id, *wait],
                ok={"200": ("ToolCallOut", "The request")},
                errors=("400", "401", "404"),
            ),
        },
        "/v1/tool-calls/{id}/cancel": {
            "post": _operation(
                "cancelToolCall",
                "Withdraw a pending request (the body is optional).",
                parameters=[call_id],
                body=("CancelIn", False),
                ok={"200": ("ToolCallOut", "The cancelled request")},
                errors=("400", "401", "404", "409", "413"),
            ),
        },
        "/v1/tool-call-batches": {
            "post": _operation(
                "submitToolCallBatch",
                "Submit the tool calls of one model turn (1 to 50): each is decided at once "
                "or becomes a request; the requests form one batch, shown to approvers as one "
                "card. With `wait`, hold the response until every call is decided.",
                body=("BatchIn", True),
                ok={"201": ("BatchOut", "The batch (see `Location`)")},
                errors=("400", "401", "413", "429"),
            ),
        },
        "/v1/tool-call-batches/{id}": {
            "get": _operation(
                "getToolCallBatch",
                "A batch's calls in order; with `wait`, long-poll until every call is decided.",
                parameters=[call_id, *wait],
                ok={"200": ("BatchOut", "The batch")},
                errors=("400", "401", "404"),
            ),
        },
        "/v1/tool-call-batches/{id}/cancel": {
            "post": _operation(
                "cancelToolCallBatch",
                "Withdraw every still-pending call of the batch; decided calls stay decided.",
                parameters=[call_id],
                body=("CancelIn", False),
                ok={"200": ("BatchOut", "The batch after cancelling")},
                errors=("400", "401", "404", "413"),
            ),
        },
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
