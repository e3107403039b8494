"""The HumanLayer wire format, as the ``humanlayer`` SDK 0.7 sends and parses it.

Field names and shapes follow the SDK's ``core/models.py`` exactly:
``FunctionCall`` and ``HumanContact`` (``run_id``, ``call_id``, ``spec``,
``status``). Bodies are validated like the ``/v1`` API's (strict, unknown keys
refused, the offending field's path in the 400), with one allowance: the
SDK's ``channel``, ``reject_options``, ``response_options`` and ``state`` are
accepted as any JSON and echoed back, but tapgate's policy, not the agent,
decides who is asked, so they do not route anything. A ``status`` in a create
body must be null: an agent cannot create a call that is already answered.

The status mapping is the contract the SDK's polling loops depend on: a
function call is pending while ``approved`` is null, and a denial always has a
non-empty ``comment`` (the SDK refuses a rejection without one); a contact is
pending while ``response`` is null, so every final state, a dismissal or an
expiry included, has a response text, or the SDK would poll for ever.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Annotated, Any, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, JsonValue, StringConstraints
from pydantic_core import PydanticCustomError

from tapgate.gate.models import CONTACT_TOOL, Decision, Request, canonical_json
from tapgate.policy.masking import mask_arguments
from tapgate.server.api.models import Body, Name, parse_body, require_finite
from tapgate.store.calls import ClientCall

__all__ = [
    "CONTACT",
    "FUNCTION_CALL",
    "NO_ANSWER",
    "FunctionCallIn",
    "FunctionCallOut",
    "FunctionCallStatusOut",
    "HumanContactIn",
    "HumanContactOut",
    "HumanContactStatusOut",
    "contact_status",
    "edited_comment",
    "function_call_status",
    "parse_call",
    "stored_body",
]

FUNCTION_CALL = "humanlayer.function_call"
"""``ClientCall.kind`` of a HumanLayer function call."""

CONTACT = "humanlayer.contact"
"""``ClientCall.kind`` of a HumanLayer human contact."""

NO_ANSWER = "No answer from a human: "
"""How a contact's response starts when nobody answered it (dismissed, expired, withdrawn)."""

Model = TypeVar("Model", bound=BaseModel)

# The SDK makes ids like "call-AbC_d-1"; they travel in URL paths, so no "/",
# "?", "%" or spaces, and no leading "." (".." would be a path segment).
CallId = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_~-][A-Za-z0-9._:~-]{0,199}$")]


def _not_the_contact_tool(fn: str) -> str:
    if fn == CONTACT_TOOL:
        raise PydanticCustomError(
            "reserved", f"{CONTACT_TOOL!r} is reserved for contact requests (/contact_requests)"
        )
    return fn


class FunctionCallSpecIn(Body):
    """``spec`` of a function call: the function's name and keyword arguments."""

    fn: Annotated[Name, AfterValidator(_not_the_contact_tool)]
    kwargs: dict[str, JsonValue]
    channel: dict[str, JsonValue] | None = None
    reject_options: list[dict[str, JsonValue]] | None = None
    state: dict[str, JsonValue] | None = None


class FunctionCallIn(Body):
    """``POST /function_calls``: becomes tool ``fn`` with ``kwargs``, session ``run_id``."""

    run_id: Name
    call_id: CallId
    spec: FunctionCallSpecIn
    status: None = None


class HumanContactSpecIn(Body):
    """``spec`` of a contact: the message for a human, and an optional subject."""

    msg: Annotated[str, StringConstraints(min_length=1)]
    subject: str | None = None
    channel: dict[str, JsonValue] | None = None
    response_options: list[dict[str, JsonValue]] | None = None
    state: dict[str, JsonValue] | None = None


class HumanContactIn(Body):
    """``POST /contact_requests``: becomes a ``human_contact`` request, session ``run_id``."""

    run_id: Name
    call_id: CallId
    spec: HumanContactSpecIn
    status: None = None


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class FunctionCallStatusOut(_Out):
    """The SDK's ``FunctionCallStatus``: ``approved`` is null while a human is deciding."""

    requested_at: datetime | None
    responded_at: datetime | None
    approved: bool | None
    comment: str | None
    reject_option_name: str | None = None
    slack_message_ts: str | None = None


class FunctionCallOut(_Out):
    """The SDK's ``FunctionCall``: the call as sent, with its status now."""

    run_id: str
    call_id: str
    spec: FunctionCallSpecIn
    status: FunctionCallStatusOut


class HumanContactStatusOut(_Out):
    """The SDK's ``HumanContactStatus``: ``response`` is null while nobody has answered."""

    requested_at: datetime | None
    responded_at: datetime | None
    response: str | None
    response_option_name: str | None = None


class HumanContactOut(_Out):
    """The SDK's ``HumanContact``: the contact as sent, with its status now."""

    run_id: str
    call_id: str
    spec: HumanContactSpecIn
    status: HumanContactStatusOut


def parse_call(model: type[Model], raw: bytes) -> Model:
    """Validate a create body; NaN and infinities (which Python's JSON reads) are a 400 too."""
    parsed = parse_body(model, raw)
    require_finite(parsed.model_dump())
    return parsed


def stored_body(body: FunctionCallIn | HumanContactIn) -> str:
    """The body as kept with the call: canonical, so equal bodies compare equal as text."""
    return canonical_json(body.model_dump(mode="json"))


def function_call_status(call: ClientCall, request: Request | None) -> FunctionCallStatusOut:
    """The status of a call decided at once (no ``request``) or by a request's lifecycle."""
    if request is None:
        decision = call.decision
        assert decision is not None  # a stored call has a request or a decision
        return FunctionCallStatusOut(
            requested_at=call.created_at,
            responded_at=call.created_at,
            approved=decision.allowed,
            comment=_decision_comment(decision),
        )
    decided = request.decision()
    if decided is not None and decided.edited and decided.arguments is not None:
        # The SDK would run the call as sent: an approval of other arguments is no
        # approval of this one. The model reads why, and may ask again as edited.
        return FunctionCallStatusOut(
            requested_at=request.created_at,
            responded_at=request.resolved_at,
            approved=False,
            comment=edited_comment(decided.decided_by, decided.arguments),
        )
    return FunctionCallStatusOut(
        requested_at=request.created_at,
        responded_at=request.resolved_at,
        approved=None if decided is None else decided.allowed,
        comment=None if decided is None else _request_comment(request, decided),
    )


def edited_comment(by: str, arguments: Mapping[str, Any]) -> str:
    """Why an edited approval reaches a HumanLayer client as not approved (masked arguments)."""
    shown = canonical_json(mask_arguments(arguments))
    return (
        f"{by} approved this call only with edited arguments, which this API cannot carry: "
        f"it was not approved as sent. Call it again with these arguments: {shown[:2000]}"
    )


def contact_status(request: Request) -> HumanContactStatusOut:
    """A contact's status: the approver's typed answer, or why there is none."""
    return HumanContactStatusOut(
        requested_at=request.created_at,
        responded_at=request.resolved_at,
        response=None if request.is_pending else _response(request),
    )


def _decision_comment(decision: Decision) -> str:
    return decision.reason.strip() or f"{decision.status} by {decision.decided_by}"


def _request_comment(request: Request, decided: Decision) -> str:
    if request.status == "expired":
        return f"expired: no decision within {_ttl(request)}s (on_timeout: {decided.verdict})"
    reason = (request.resolution_reason or "").strip()
    return reason or f"{request.status} by {request.resolved_by}"


def _response(request: Request) -> str:
    answer = request.resolution_reason or ""
    by = request.resolved_by
    if request.status == "approved":
        return answer if answer.strip() else f"{by} acknowledged the message without an answer."
    if request.status == "denied":
        why = f": {answer.strip()}" if answer.strip() else ""
        return f"{NO_ANSWER}{by} dismissed the question{why}."
    if request.status == "expired":
        return f"{NO_ANSWER}nobody answered within {_ttl(request)}s."
    return f"{NO_ANSWER}the question was withdrawn by {by}."


def _ttl(request: Request) -> str:
    return f"{(request.expires_at - request.created_at).total_seconds():g}"
