"""The agent API's wire format: bodies and queries in, tool-call states and errors out.

Bodies are validated by pydantic straight from the raw bytes, in strict mode:
``"5"`` is not a number and ``1`` is not a tool name, because an agent that
sends the wrong type has a bug worth hearing about rather than a value worth
guessing. Unknown keys are refused, so a misspelt ``"wiat"`` fails loudly
instead of silently not waiting. Every failure becomes one :class:`ApiError`
whose ``path`` names the offending field (``arguments.x``), in the same
notation the config loader uses for YAML paths.

The response models are the source of the OpenAPI schemas and the tests'
oracle for real responses, so the document cannot drift from what is sent.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    StringConstraints,
    ValidationError,
    ValidationInfo,
)
from pydantic_core import PydanticCustomError

from tapgate.config.errors import format_path
from tapgate.gate.models import (
    CONTACT_TOOL,
    Decision,
    DecisionSource,
    Request,
    Risk,
    Scope,
    ToolCall,
)

__all__ = [
    "ApiError",
    "Body",
    "CancelIn",
    "ErrorDetail",
    "ErrorOut",
    "ListQuery",
    "Name",
    "SandboxOut",
    "ToolCallIn",
    "ToolCallList",
    "ToolCallOut",
    "ToolName",
    "WaitQuery",
    "WaitSeconds",
    "non_finite_path",
    "parse_body",
    "parse_query",
    "require_finite",
    "tool_call_from_decision",
    "tool_call_from_request",
]

# The store's column width for tool and session names; control characters are
# refused because PostgreSQL cannot store NUL and chat messages show the rest,
# and so are line separators and bidi overrides, which could make the one-line
# confirmations in chat (LINE replies, Slack ephemerals) read as something else.
Name = Annotated[
    str,
    StringConstraints(
        min_length=1,
        max_length=200,
        pattern=r"^[^\x00-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]+$",
    ),
]
# Free text kept in the audit log: lines and tabs are fine, other control
# characters are not (NUL cannot even be stored by PostgreSQL).
Reason = Annotated[
    str, StringConstraints(max_length=1000, pattern=r"^[^\x00-\x08\x0b\x0c\x0e-\x1f\x7f]*$")
]
Model = TypeVar("Model", bound=BaseModel)


class Body(BaseModel):
    """Base of every request body of both APIs: strict types, unknown keys refused."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class _Query(BaseModel):
    # Lax on purpose: every query value arrives as text ("30", "pending").
    model_config = ConfigDict(extra="forbid", frozen=True)


def _at_most_max_wait(value: float, info: ValidationInfo) -> float:
    """The server's ``max_wait`` arrives as validation context: it is config, not schema."""
    limit = (info.context or {}).get("max_wait")
    if limit is not None and value > limit:
        raise PydanticCustomError(
            "less_than_equal", "must be at most {le} (server.max_wait)", {"le": f"{limit:g}"}
        )
    return value


def _not_a_question(tool: str) -> str:
    """``human_contact`` names questions, which an answer approves: never a tool call."""
    if tool == CONTACT_TOOL:
        raise PydanticCustomError(
            "reserved",
            f"{CONTACT_TOOL!r} is reserved for questions to a human "
            "(the HumanLayer-compatible contact_requests)",
        )
    return tool


ToolName = Annotated[Name, AfterValidator(_not_a_question)]
"""A tool's name as an agent may submit it: any name but the questions' reserved one."""
WaitSeconds = Annotated[float, Field(ge=0, allow_inf_nan=False), AfterValidator(_at_most_max_wait)]
"""How long to hold the response open, 0 to ``server.max_wait`` seconds."""


class ToolCallIn(Body):
    """``POST /v1/tool-calls``: the tool call the agent wants to make, and how long to wait."""

    tool: ToolName
    arguments: dict[str, JsonValue] = Field(default_factory=dict)
    session: Name | None = None
    risk: Risk | None = None
    wait: WaitSeconds | None = None


class CancelIn(Body):
    """``POST /v1/tool-calls/{id}/cancel``: an optional reason, kept in the audit log."""

    reason: Reason | None = None


class WaitQuery(_Query):
    """``GET /v1/tool-calls/{id}?wait=S``: long-poll up to ``S`` seconds."""

    wait: WaitSeconds | None = None


class ListQuery(_Query):
    """``GET /v1/tool-calls?status=pending&limit=N``: the agent's own requests, newest first.

    ``status=decided&after=CURSOR`` instead lists the requests decided since
    the cursor, in decision order (see ``ToolCallList.next``).
    """

    status: Literal["pending", "approved", "denied", "expired", "cancelled", "decided"] | None = (
        None
    )
    after: (
        Annotated[str, StringConstraints(pattern=r"^[0-9]{1,18}\.[A-Za-z0-9_-]{1,32}$")] | None
    ) = None
    limit: int = Field(default=100, ge=1, le=500)


class ToolCallOut(BaseModel):
    """The state of one tool call: decided at once (``id`` null) or a request to follow."""

    model_config = ConfigDict(extra="forbid", strict=True)

    id: str | None
    decision: Literal["allow", "deny", "pending"]
    status: Literal["pending", "allowed", "denied", "approved", "expired", "cancelled"]
    reason: str
    decided_by: str | None
    source: DecisionSource | None
    rule: str | None
    reused: bool
    tool: str
    session: str | None
    created_at: datetime | None
    expires_at: datetime | None
    resolved_at: datetime | None
    approvers: list[str]
    batch_id: str | None = None
    consumed: str | None = None
    """Set when this identical re-issue consumed an earlier approval: that request's id."""
    edited: bool = False
    """An approver edited the call before approving it: run it with ``arguments``, not as sent."""
    arguments: dict[str, JsonValue] | None = None
    """The edited arguments (``edited`` only), unmasked: the agent runs them."""
    scope: Scope | None = None
    """How far the approval reaches: ``once`` (this call only), ``session`` (the call again
    in this session) or ``always``; for a call a grant allowed, that grant's scope; null
    for any other decision and while pending."""


class ToolCallList(BaseModel):
    """``GET /v1/tool-calls``: newest first; with ``status=decided``, in decision order."""

    model_config = ConfigDict(extra="forbid", strict=True)

    tool_calls: list[ToolCallOut]
    next: str | None = None
    """With ``status=decided``: the cursor to pass as ``after`` next time."""


class ErrorDetail(BaseModel):
    """What went wrong; ``path`` names the offending field of the body or query."""

    model_config = ConfigDict(extra="forbid", strict=True)

    code: str
    message: str
    path: str | None


class ErrorOut(BaseModel):
    """Every error response; a 409 also carries the tool call's current state."""

    model_config = ConfigDict(extra="forbid", strict=True)

    error: ErrorDetail
    tool_call: ToolCallOut | None = None


class SandboxOut(BaseModel):
    """``GET /v1/tools/{tool}/sandbox``: what ``tapgate run --sandbox`` lets the tool's commands do.

    The tool's ``sandbox`` section as the operator wrote it (``writable`` may
    hold ``"."``, the directory the command starts in); ``source`` is its YAML
    path, or null when the config says nothing and the defaults apply: no
    network, nothing writable but a private ``/tmp``, nothing hidden.
    """

    model_config = ConfigDict(extra="forbid", strict=True)

    tool: str
    network: bool
    writable: list[str]
    hidden: list[str]
    source: str | None


class ApiError(Exception):
    """An error response in waiting: the handler raises it, the middleware renders it."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        path: str | None = None,
        headers: Mapping[str, str] | None = None,
        tool_call: ToolCallOut | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.headers = dict(headers or {})
        self.body = ErrorOut(
            error=ErrorDetail(code=code, message=message, path=path), tool_call=tool_call
        )

    def json(self) -> str:
        """The response body; ``tool_call`` appears only when there is one."""
        exclude = {"tool_call"} if self.body.tool_call is None else None
        return self.body.model_dump_json(exclude=exclude)


def parse_body(model: type[Model], raw: bytes, *, max_wait: float | None = None) -> Model:
    """Validate a JSON body; raise a 400 :class:`ApiError` naming the first bad field."""
    try:
        parsed = model.model_validate_json(raw, context={"max_wait": max_wait})
    except ValidationError as exc:
        raise _invalid(exc, "body") from None
    if isinstance(parsed, ToolCallIn):
        require_finite(parsed.arguments, ("arguments",))
    return parsed


def parse_query(
    model: type[Model], query: Mapping[str, str], *, max_wait: float | None = None
) -> Model:
    """Validate query parameters; raise a 400 :class:`ApiError` naming the first bad one."""
    try:
        return model.model_validate(dict(query), context={"max_wait": max_wait})
    except ValidationError as exc:
        raise _invalid(exc, "query") from None


def _invalid(exc: ValidationError, where: Literal["body", "query"]) -> ApiError:
    errors = exc.errors(include_url=False, include_input=False)
    first = errors[0]
    loc = tuple(first["loc"])
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    if first["type"] == "json_invalid":
        return ApiError(400, "invalid_json", first["msg"] + more)
    if not loc and first["type"] == "model_type":
        return ApiError(400, f"invalid_{where}", "expected a JSON object")
    message = first["msg"]
    if first["type"] == "extra_forbidden":
        message = f"unknown field {loc[-1]!r}"
    elif first["type"] == "missing":
        message = "field required"
    return ApiError(400, f"invalid_{where}", message + more, path=format_path(loc) or None)


def require_finite(value: Any, loc: tuple[str | int, ...] = ()) -> None:
    """Raise a 400 :class:`ApiError` naming where in ``value`` (JSON) a number is not finite.

    Python's JSON reads NaN and 1e400 (infinity); the stored text must stay JSON.
    """
    where = non_finite_path(value, loc)
    if where is not None:
        raise ApiError(400, "invalid_body", "must be a finite number", path=format_path(where))


def non_finite_path(value: Any, loc: tuple[str | int, ...]) -> tuple[str | int, ...] | None:
    """Where in ``value`` (JSON) a float is NaN or infinite, as a path below ``loc``; else None.

    JSON cannot carry such numbers back to an agent, so bodies holding them are refused.
    """
    if isinstance(value, float) and not math.isfinite(value):
        return loc
    items: Any = ()
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    for key, item in items:
        found = non_finite_path(item, (*loc, key))
        if found is not None:
            return found
    return None


def tool_call_from_decision(
    decision: Decision, call: ToolCall, *, consumed: str | None = None
) -> ToolCallOut:
    """A call decided at once (policy, a grant, an earlier identical decision): no request."""
    return ToolCallOut(
        id=None,
        decision=decision.verdict,
        status=decision.status,
        reason=decision.reason,
        decided_by=decision.decided_by,
        source=decision.source,
        rule=decision.rule,
        reused=False,
        tool=call.tool,
        session=call.session,
        created_at=None,
        expires_at=None,
        resolved_at=None,
        approvers=[],
        consumed=consumed,
        scope=decision.scope,
        **_edit(decision),
    )


def tool_call_from_request(request: Request, *, reused: bool = False) -> ToolCallOut:
    """A request's state; while pending, ``reason`` says why policy asked a human."""
    decision = request.decision()
    return ToolCallOut(
        id=request.id,
        decision=decision.verdict if decision is not None else "pending",
        status=request.status,
        reason=decision.reason if decision is not None else request.reason,
        decided_by=decision.decided_by if decision is not None else None,
        source=decision.source if decision is not None else None,
        rule=request.rule,
        reused=reused,
        tool=request.tool,
        session=request.session,
        created_at=request.created_at,
        expires_at=request.expires_at,
        resolved_at=request.resolved_at,
        approvers=list(request.approvers),
        batch_id=request.batch_id,
        scope=decision.scope if decision is not None else None,
        **(_edit(decision) if decision is not None else {}),
    )


def _edit(decision: Decision) -> dict[str, Any]:
    """``edited`` and ``arguments`` of an edited approval; nothing for any other decision."""
    if not decision.edited or decision.arguments is None:
        return {}
    return {"edited": True, "arguments": dict(decision.arguments)}
