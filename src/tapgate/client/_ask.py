"""Ask once and wait with a deadline: the shared core of the hook and ``tapgate run``.

``RemoteGate.check`` waits as long as the server lets a request live. A hook
and a wrapped command cannot: Claude Code kills a hook that outlives its own
timeout, and a deploy script wants a bound. :func:`decide` therefore submits,
long-polls up to a deadline of its own, and when that passes *withdraws* the
request (a cancel), so that a late tap cannot approve a call nobody is waiting
for any more and the approvers see that the question is gone.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

from tapgate.client._errors import ClientError, Unauthorized
from tapgate.client._hook_answer import reason_line
from tapgate.client._plans import TransportFailure
from tapgate.client._wire import without_credentials
from tapgate.errors import AlreadyResolved, TapgateError
from tapgate.gate.models import Decision, Request, Ticket, ToolCall

__all__ = ["SyncGate", "decide", "describe", "failure", "withdraw"]


class SyncGate(Protocol):
    """What :func:`decide` needs of a gate: ``SyncRemoteGate`` or the commands' ``LeanGate``."""

    def submit(self, call: ToolCall) -> Ticket: ...

    def wait(self, request_id: str, timeout: float | None = None) -> Decision | None: ...

    def cancel(self, request_id: str, *, reason: str | None = None) -> Decision: ...


def decide(
    gate: SyncGate,
    call: ToolCall,
    *,
    timeout: float | None,
    on_pending: Callable[[Request], None] | None = None,
) -> Decision | None:
    """The decision on ``call``, or ``None`` when ``timeout`` seconds passed without one.

    ``on_pending`` is told about the request as soon as it exists (to show a
    countdown, or to know what to cancel on Ctrl-C). A ``None`` answer means
    the request was withdrawn on the server (see :func:`withdraw`). Errors of
    the gate (unreachable, 401, ...) propagate: only the caller knows what
    they should turn into; one raised while waiting first withdraws the
    request (best effort), since nobody will wait for it any more.
    """
    started = time.monotonic()
    ticket = gate.submit(call)
    if ticket.decision is not None:
        return ticket.decision
    request = ticket.request
    assert request is not None  # a ticket without a decision carries its request
    if on_pending is not None:
        on_pending(request)
    request_id = request.id
    remaining = None if timeout is None else max(timeout - (time.monotonic() - started), 0.0)
    try:
        decision = gate.wait(request_id, remaining)
    except TapgateError:  # we stop waiting: nobody else will, so take the request back
        withdraw(gate, request_id, "the agent could not keep waiting (an error); withdrawn")
        raise
    if decision is not None or timeout is None:
        return decision
    return withdraw(gate, request_id, f"nobody decided within {timeout:g}s; withdrawn by the agent")


def withdraw(
    gate: SyncGate, request_id: str, reason: str, *, strict: bool = False
) -> Decision | None:
    """Cancel a request the caller stops waiting for; ``None`` once it is cancelled.

    A decision that arrived in the meantime wins the race (the cancel answers
    409) and is returned instead, so an approval in the last second is not
    lost. If the server cannot be reached the request simply expires there:
    ``None`` too, unless ``strict``, when the error is raised so the caller
    can say the request was *not* cancelled.
    """
    try:
        gate.cancel(request_id, reason=reason)
    except AlreadyResolved:
        try:
            return gate.wait(request_id, 0)
        except TapgateError:
            if strict:
                raise
            return None
    except TapgateError:
        if strict:
            raise
        return None
    return None


def describe(decision: Decision) -> str:
    """One line on who or what decided, for the model and for a terminal.

    Approvers' reasons are free text that often leaves out who decided, and
    policy reasons name no rule, so both are completed here.
    """
    return reason_line(
        decision.source, decision.decided_by, decision.reason, decision.rule, decision.allowed
    )


def failure(url: str, exc: BaseException) -> str:
    """What kept the server at ``url`` from deciding, in words an operator can act on.

    The text reaches the model (a hook's reason) and logs: credentials in the
    URL (``https://user:pass@host``) are left out.
    """
    url = without_credentials(url)
    if isinstance(exc, Unauthorized):
        return f"the server at {url} refused the agent token ({exc.message})"
    if isinstance(exc, ClientError) and exc.code == "unreachable":
        cause = exc.__cause__
        if isinstance(cause, TransportFailure):  # already "ConnectError: ...", for any driver
            detail = str(cause)
        else:
            detail = f"{type(cause).__name__}: {cause}" if cause is not None else exc.message
        return f"server unreachable at {url} ({detail})"
    if isinstance(exc, TapgateError):
        return f"the server at {url} failed the request ({exc})"
    return f"unexpected failure ({type(exc).__name__}: {exc})"
