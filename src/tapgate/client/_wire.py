"""The agent API's wire format as the client sees it: bodies out, records and errors in.

Pure functions over dicts and :class:`Reply` objects (an ``httpx.Response`` is
one; so is the hook's ``http.client`` answer), shared by every gate; this
module imports no HTTP library, so the hook starts without httpx. The client
does not import the server's pydantic models (it must not depend on the
server's package), so it checks what it reads by hand:
a response that is not the documented shape is a :class:`ClientError` with
code ``bad_response``, never a ``KeyError`` deep in an agent.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Protocol, cast, get_args
from urllib.parse import urlsplit, urlunsplit

from tapgate.client._errors import ClientError, Unauthorized
from tapgate.errors import AlreadyResolved, RequestNotFound, TapgateError
from tapgate.gate.models import (
    Decision,
    DecisionSource,
    DecisionStatus,
    Request,
    Scope,
    Ticket,
    ToolCall,
    Verdict,
    args_digest,
)

__all__ = [
    "Reply",
    "decision_from",
    "error_from",
    "read_json",
    "submit_body",
    "ticket_from",
    "without_credentials",
]

_VERDICTS = frozenset(get_args(Verdict))
_STATUSES = frozenset(get_args(DecisionStatus))
_SOURCES = frozenset(get_args(DecisionSource))
_SCOPES = frozenset(get_args(Scope))


class Reply(Protocol):
    """An HTTP response as the plans read it; ``headers`` looks names up case-insensitively."""

    @property
    def status_code(self) -> int: ...

    @property
    def reason_phrase(self) -> str: ...

    @property
    def headers(self) -> Mapping[str, str]: ...

    @property
    def content(self) -> bytes: ...


def submit_body(call: ToolCall, wait: float | None) -> dict[str, Any]:
    """The ``POST /v1/tool-calls`` body; ``call.agent`` is left out: the token names the agent."""
    body: dict[str, Any] = {"tool": call.tool, "arguments": dict(call.arguments)}
    if call.session is not None:
        body["session"] = call.session
    if call.risk is not None:
        body["risk"] = call.risk
    if wait is not None:
        body["wait"] = wait
    return body


def read_json(response: Reply, request_id: str | None = None) -> dict[str, Any]:
    """The JSON object of a 2xx response; any other response raises its tapgate error."""
    if not 200 <= response.status_code < 300:
        raise error_from(response, request_id)
    body = _object(response)
    if body is None:
        raise ClientError(
            "the server's answer is not a JSON object",
            status=response.status_code,
            code="bad_response",
        )
    return body


def error_from(response: Reply, request_id: str | None = None) -> TapgateError:
    """The tapgate error for an error response, with the server's message."""
    status = response.status_code
    body = _object(response) or {}
    detail = body.get("error")
    if isinstance(detail, dict) and isinstance(detail.get("message"), str):
        code, message = str(detail.get("code", f"http_{status}")), str(detail["message"])
    else:
        text = response.content[:2000].decode("utf-8", "replace")[:500]
        code, message = f"http_{status}", text or response.reason_phrase
    if status == 401:
        return Unauthorized(message, status=status, code=code)
    if status == 404 and request_id is not None and code == "not_found":
        return RequestNotFound(request_id)
    current = body.get("tool_call")
    if status == 409 and request_id is not None and isinstance(current, dict):
        by = current.get("decided_by")
        return AlreadyResolved(
            request_id, str(current.get("status")), by if isinstance(by, str) else None
        )
    return ClientError(message, status=status, code=code)


def decision_from(body: dict[str, Any]) -> Decision | None:
    """The decision in a tool-call state, ``None`` while it is pending."""
    verdict = body.get("decision")
    if verdict == "pending":
        return None
    status, source = body.get("status"), body.get("source")
    if verdict not in _VERDICTS or status not in _STATUSES or source not in _SOURCES:
        raise _bad(f"not a decided tool call: decision={verdict!r} status={status!r}")
    rule, request_id = body.get("rule"), body.get("id")
    edited, arguments = body.get("edited") is True, body.get("arguments")
    if edited and (not isinstance(arguments, dict) or verdict != "allow"):
        raise _bad("an edited decision without the edited arguments")
    return Decision(
        verdict=cast(Verdict, verdict),
        status=cast(DecisionStatus, status),
        source=cast(DecisionSource, source),
        decided_by=_text(body, "decided_by"),
        reason=_text(body, "reason"),
        rule=rule if isinstance(rule, str) else None,
        request_id=request_id if isinstance(request_id, str) else None,
        arguments=cast(dict[str, Any], arguments) if edited else None,
        edited=edited,
        scope=_scope(body.get("scope")),
    )


def ticket_from(body: dict[str, Any], call: ToolCall) -> Ticket:
    """A :class:`Ticket` from a submit's answer, the pending request rebuilt from the wire.

    The API does not send a request's agent, fingerprint or effective risk, so
    the rebuilt request has ``agent=""``, ``fingerprint=""`` and the declared
    risk (``"write"`` when none was declared); everything else is the server's.
    """
    decision = decision_from(body)
    if decision is not None:
        return Ticket(decision=decision)
    approvers = body.get("approvers")
    session = body.get("session")
    request = Request(
        id=_text(body, "id"),
        agent="",
        session=session if isinstance(session, str) else None,
        tool=_text(body, "tool"),
        arguments=dict(call.arguments),
        args_digest=args_digest(call.arguments),
        fingerprint="",
        risk=call.risk or "write",
        rule=_text(body, "rule"),
        reason=_text(body, "reason"),
        approvers=tuple(str(a) for a in approvers) if isinstance(approvers, list) else (),
        status="pending",
        created_at=_time(body, "created_at"),
        expires_at=_time(body, "expires_at"),
    )
    return Ticket(decision=None, request=request, reused=body.get("reused") is True)


def _scope(value: Any) -> Scope | None:
    """An approval's ``scope``; ``None`` from a server that does not send one.

    A value this client does not know (a newer server's) reads as ``None``
    too: nothing then takes the approval for more than the call itself.
    """
    return cast(Scope, value) if isinstance(value, str) and value in _SCOPES else None


def without_credentials(url: str) -> str:
    """``url`` without ``user:password@``: for reprs, logs and a model-visible reason."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port is not None else host
    return urlunsplit(parts._replace(netloc=netloc))


def _object(response: Reply) -> dict[str, Any] | None:
    try:
        body = json.loads(response.content)
    except ValueError:
        return None
    return cast(dict[str, Any], body) if isinstance(body, dict) else None


def _text(body: dict[str, Any], key: str) -> str:
    value = body.get(key)
    if not isinstance(value, str):
        raise _bad(f"{key!r} is not a string")
    return value


def _time(body: dict[str, Any], key: str) -> datetime:
    try:
        return datetime.fromisoformat(_text(body, key))
    except ValueError:
        raise _bad(f"{key!r} is not an ISO 8601 time") from None


def _bad(message: str) -> ClientError:
    return ClientError(
        f"unexpected answer from the server: {message}", status=None, code="bad_response"
    )
