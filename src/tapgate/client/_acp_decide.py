"""The ACP proxy's decision half: a ``session/request_permission`` as a tapgate call, and back.

:mod:`tapgate.client._acp_proxy` moves messages; this module decides, apart
from the transport, so the rules that matter for safety read on their own:

- the call: the agent is whoever the token belongs to, the session is the
  ACP session id, the tool is the tool call's ``kind`` (``execute``,
  ``edit``, ``fetch``... ``other`` where the agent gives none), the
  arguments its ``rawInput`` (an object as it is, anything else under
  ``input``) with its ``title`` added as ``title`` unless ``rawInput`` has
  one;
- the answer: always one of the options *the agent offered*, by its own id.
  An approval remembered for the session or always (the decision's
  ``scope``: the very call the approver decided) and an allow a grant
  answered select the agent's ``allow_always`` where offered, else its
  ``allow_once``; any other allow ``allow_once``, else ``allow_always``; a
  deny ``reject_once``, and so an approval an approver edited (ACP cannot
  hand the agent other input, and the call as asked was not approved).
  Where no offered option fits, and where tapgate could not decide at all
  (unreachable, a refused token), the answer is ``cancelled``: never an
  allow tapgate did not give.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from acp.schema import (
    AllowedOutcome,
    DeniedOutcome,
    PermissionOption,
    RequestPermissionRequest,
    RequestPermissionResponse,
)

from tapgate.client._mcp_gate import decided
from tapgate.client._remote import RemoteGate
from tapgate.gate.models import Decision, ToolCall

__all__ = ["CANCELLED", "answer", "choose", "permission_call"]

CANCELLED: dict[str, Any] = {"outcome": {"outcome": "cancelled"}}
"""The answer that allows nothing: the agent treats the tool call as not permitted."""
_WITHDRAWN = "the ACP client cancelled the prompt turn; withdrawn"


def permission_call(request: RequestPermissionRequest) -> ToolCall:
    """The tapgate call for an agent's permission request (see the module's docstring)."""
    tool_call = request.tool_call
    raw = tool_call.raw_input
    arguments: dict[str, Any] = dict(raw) if isinstance(raw, dict) else {}
    if raw is not None and not isinstance(raw, dict):
        arguments["input"] = raw
    if tool_call.title is not None:
        arguments.setdefault("title", tool_call.title)
    return ToolCall(tool=tool_call.kind or "other", arguments=arguments, session=request.session_id)


def choose(decision: Decision, options: Sequence[PermissionOption]) -> str | None:
    """The id of the agent's option that says what tapgate decided; ``None``: none offered does."""
    if decision.allowed and not decision.edited:  # an edit ACP cannot carry: denied
        # a server that does not send ``scope`` still says when a grant answered
        remembered = decision.scope in ("session", "always") or decision.source == "grant"
        kinds: tuple[str, ...] = ("allow_always", "allow_once")
        if not remembered:
            kinds = ("allow_once", "allow_always")
    else:
        kinds = ("reject_once",)
    for kind in kinds:
        for option in options:
            if option.kind == kind:
                return option.option_id
    return None


async def answer(gate: RemoteGate, params: Any) -> dict[str, Any]:
    """The ``session/request_permission`` result for ``params``; ``cancelled`` if undecidable.

    Cancelling this coroutine (the editor cancelled the turn) withdraws the
    request from tapgate.
    """
    try:
        request = RequestPermissionRequest.model_validate(params)
    except ValueError:
        return CANCELLED  # not what ACP sends: allow nothing
    try:
        decision = await decided(gate, permission_call(request), withdrawn=_WITHDRAWN)
    except Exception:  # unreachable, a refused token, a failing server: allow nothing
        return CANCELLED
    option = choose(decision, request.options)
    outcome = (
        DeniedOutcome(outcome="cancelled")
        if option is None
        else AllowedOutcome(outcome="selected", option_id=option)
    )
    response = RequestPermissionResponse(outcome=outcome)
    return response.model_dump(mode="json", by_alias=True, exclude_none=True)
