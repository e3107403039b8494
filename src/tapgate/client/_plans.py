"""What the remote gates do, written once and without I/O: plans of HTTP steps.

Each operation (submit, wait, check, cancel) is a generator that yields
:class:`Send` (make this HTTP request, send me the response or throw me the
transport error) and :class:`Pause` (sleep this long), and returns its result.
The async and the sync gate are ~20-line drivers that execute the steps with
``httpx.AsyncClient`` or ``httpx.Client``, so retries, backoff, long-poll
slicing and parsing exist once and are tested once (gidgethub's sans-I/O idea).

Retries cover transport failures (refused connections, resets, timeouts) and
502 / 503 / 504 from a proxy, with capped exponential backoff and jitter; a
``Retry-After`` on the answer (tapgate's 503 sends one) is a floor under the
next delay, capped like the backoff so a proxy cannot park an agent for an hour.
Reads and long-polls are retried on any of them. The two POSTs (submit,
cancel) are resent only when the server cannot have acted on them: the
connection was never made, or the answer was a 503 (tapgate's own "database
unavailable", or a proxy with no server to pass it to). A submit whose
answer was lost may have created a request *and had it decided* while the
server held the answer: sent again, it would create a second request (the
server reuses only a still-pending one), so a denial could be asked again
and approved by someone else. That failure is an error the caller must
treat as "not allowed"; a cancel sent twice answers 409.
"""

from __future__ import annotations

import random
import time
from collections.abc import Generator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx

from tapgate.client._errors import ClientError
from tapgate.client._sandbox import SandboxSpec, spec_from
from tapgate.client._wire import decision_from, read_json, submit_body, ticket_from
from tapgate.core.models import Decision, Ticket, ToolCall

__all__ = ["Finished", "Pause", "Plan", "Planner", "Send", "resume", "retry_after"]

T = TypeVar("T")

_RETRY_STATUSES = frozenset({502, 503, 504})
_NEVER_SENT = (httpx.ConnectError, httpx.ConnectTimeout)
_MAX_DELAY = 10.0


@dataclass(frozen=True, kw_only=True, slots=True)
class Send:
    """One HTTP request for a driver to make; ``idempotent`` says whether it may be resent."""

    method: str
    path: str
    timeout: httpx.Timeout
    json: dict[str, Any] | None = None
    params: dict[str, str] = field(default_factory=dict)
    idempotent: bool = True


@dataclass(frozen=True, kw_only=True, slots=True)
class Pause:
    """Sleep before the next step (backoff); a driver sleeps its own way."""

    seconds: float


@dataclass(frozen=True, kw_only=True, slots=True)
class Finished(Generic[T]):
    """A plan's result, as :func:`resume` reports it."""

    value: T


Step = Send | Pause
Plan = Generator[Step, httpx.Response | None, T]
"""A plan receives a response after a :class:`Send` and ``None`` after a :class:`Pause`."""


def resume(
    plan: Plan[T], outcome: httpx.Response | httpx.TransportError | None
) -> Step | Finished[T]:
    """Advance ``plan`` with the last step's outcome: its next step, or its result."""
    try:
        if isinstance(outcome, httpx.TransportError):
            return plan.throw(outcome)
        return plan.send(outcome)
    except StopIteration as stop:
        return Finished(value=stop.value)


class Planner:
    """Builds the plans for one server: the settings every step depends on."""

    def __init__(self, *, timeout: float, retries: int, backoff: float, long_poll: float) -> None:
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.long_poll = long_poll

    def submit(self, call: ToolCall, wait: float | None = None) -> Plan[Ticket]:
        """``POST /v1/tool-calls``, holding the answer up to ``wait`` seconds."""
        send = Send(
            method="POST",
            path="/v1/tool-calls",
            json=submit_body(call, wait),
            timeout=self._timeout(wait),
            idempotent=False,  # see the module docstring: never resent once it may have acted
        )
        response = yield from self._exchange(send)
        return ticket_from(read_json(response), call)

    def wait(self, request_id: str, timeout: float | None) -> Plan[Decision | None]:
        """Long-poll in slices of ``long_poll`` seconds until decided or ``timeout`` ends."""
        deadline = None if timeout is None else time.monotonic() + max(timeout, 0.0)
        while True:
            started = time.monotonic()
            window = self.long_poll if deadline is None else max(deadline - started, 0.0)
            wait = min(self.long_poll, window)
            send = Send(
                method="GET",
                path=_path(request_id),
                params={"wait": f"{wait:g}"},
                timeout=self._timeout(wait),
            )
            response = yield from self._exchange(send)
            decision = decision_from(read_json(response, request_id))
            if decision is not None:
                return decision
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                return None
            if now - started < wait / 2:
                # The server let go early (it is shutting down): do not spin on it.
                yield Pause(seconds=self._delay(0))

    def check(self, call: ToolCall) -> Plan[Decision]:
        """Submit, waiting one slice in the submit itself, then long-poll until decided."""
        ticket = yield from self.submit(call, wait=self.long_poll)
        if ticket.decision is not None:
            return ticket.decision
        assert ticket.request is not None
        decision = yield from self.wait(ticket.request.id, None)
        assert decision is not None  # with no timeout, wait returns only a decision
        return decision

    def cancel(self, request_id: str, reason: str | None) -> Plan[Decision]:
        """``POST /v1/tool-calls/{id}/cancel``; a decided request raises ``AlreadyResolved``."""
        send = Send(
            method="POST",
            path=_path(request_id) + "/cancel",
            json={} if reason is None else {"reason": reason},
            timeout=self._timeout(None),
            idempotent=False,
        )
        response = yield from self._exchange(send)
        decision = decision_from(read_json(response, request_id))
        if decision is None:
            raise ClientError(
                "the cancelled request is still pending", status=None, code="bad_response"
            )
        return decision

    def sandbox(self, tool: str) -> Plan[SandboxSpec]:
        """``GET /v1/tools/{tool}/sandbox``: how ``tapgate run --sandbox`` confines the tool."""
        path = "/v1/tools/" + quote(tool, safe="") + "/sandbox"
        response = yield from self._exchange(
            Send(method="GET", path=path, timeout=self._timeout(None))
        )
        return spec_from(read_json(response))

    def _exchange(self, send: Send) -> Generator[Step, httpx.Response | None, httpx.Response]:
        attempt = 0
        while True:
            try:
                response = yield send
            except httpx.TransportError as exc:
                retryable = send.idempotent or isinstance(exc, _NEVER_SENT)
                if not retryable or attempt >= self.retries:
                    raise ClientError(
                        f"{send.method} {send.path} failed: {type(exc).__name__}: {exc}",
                        status=None,
                        code="unreachable",
                    ) from exc
            else:
                assert response is not None
                status = response.status_code
                transient = status == 503 or (status in _RETRY_STATUSES and send.idempotent)
                if not transient or attempt >= self.retries:
                    return response
                yield Pause(seconds=max(self._delay(attempt), retry_after(response)))
                attempt += 1
                continue
            yield Pause(seconds=self._delay(attempt))
            attempt += 1

    def _timeout(self, wait: float | None) -> httpx.Timeout:
        # A long-poll's read must outlast the wait it asked the server for.
        return httpx.Timeout(self.timeout, read=self.timeout + (wait or 0.0))

    def _delay(self, attempt: int) -> float:
        ceiling = min(_MAX_DELAY, self.backoff * 2.0**attempt)
        return ceiling * (0.5 + random.random() / 2)  # noqa: S311 - jitter, not a secret


def retry_after(response: httpx.Response) -> float:
    """The wait a ``Retry-After`` header asks for, capped at the backoff's ceiling; 0 if none.

    Both of RFC 9110's forms are read: delta-seconds and an HTTP date. A value
    that is neither is ignored (the backoff alone decides).
    """
    value = response.headers.get("Retry-After", "").strip()
    if value.isascii() and value.isdigit():  # str.isdigit alone takes "²"
        seconds = float(value)
    else:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return 0.0
        if when.tzinfo is None:  # RFC 9110 dates are GMT; a naive one is read as such
            when = when.replace(tzinfo=UTC)
        seconds = (when - datetime.now(UTC)).total_seconds()
    return min(max(seconds, 0.0), _MAX_DELAY)


def _path(request_id: str) -> str:
    return "/v1/tool-calls/" + quote(request_id, safe="")
