"""What the remote gates do, written once and without I/O: plans of HTTP steps.

Each operation (submit, wait, check, cancel) is a generator that yields
:class:`Send` (make this HTTP request, send me the response or throw me the
transport error) and :class:`Pause` (sleep this long), and returns its result.
The async and the sync gate are ~20-line drivers that execute the steps with
``httpx.AsyncClient`` or ``httpx.Client``, and the hook's driver does with
``http.client`` (:mod:`tapgate.client._lean`), so retries, backoff, long-poll
slicing and parsing exist once and are tested once (gidgethub's sans-I/O idea).
This module imports no HTTP library: a plan reads any :class:`~tapgate.client._wire.Reply`
(an ``httpx.Response`` is one) and is thrown a :class:`TransportFailure`, so the
hook starts without httpx.

Retries cover transport failures (refused connections, resets, timeouts) and
5xx answers, with capped exponential backoff and jitter; a ``Retry-After`` on
the answer (tapgate's 503 sends one) is a floor under the next delay, capped
like the backoff so a proxy cannot park an agent for an hour. After
``retries`` quick ones they go on for the ``retry_for`` window of
:mod:`tapgate.client._retrying` (capped by the request's ``expires_at``), so
that a wait rides out a server restart or a replica switch: the request
survives on the server, and the next poll re-attaches to it by its id.
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

import time
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, Self, TypeVar
from urllib.parse import quote

from tapgate.client._errors import ClientError
from tapgate.client._retrying import (
    DEFAULT_RETRY_FOR,
    Expiries,
    Outage,
    backoff,
    earliest,
    retry_after,
)
from tapgate.client._wire import Reply, decision_from, read_json, submit_body, ticket_from
from tapgate.gate.models import Decision, Ticket, ToolCall

if TYPE_CHECKING:  # the hook never asks for a sandbox: it does not load subprocess for one
    from tapgate.client._sandbox import SandboxSpec

__all__ = [
    "LONG_POLL",
    "Finished",
    "Pause",
    "Plan",
    "Planner",
    "Send",
    "SyncCalls",
    "TransportFailure",
    "drive",
    "resume",
    "retry_after",
]

T = TypeVar("T")

LONG_POLL = 60.0
"""Seconds per long-poll request: well under the server's default ``max_wait`` (300)."""


class TransportFailure(Exception):
    """A request that got no response, as a driver reports it to a plan.

    ``kind`` names the failure as httpx does (``ConnectError``, ``ReadTimeout``)
    whichever library made the request, so an operator reads the same reason
    from the hook and from a ``RemoteGate``. ``never_sent`` is true only when
    no connection was made: then even a submit may be sent again.
    """

    def __init__(self, kind: str, detail: str, *, never_sent: bool) -> None:
        self.kind = kind
        self.detail = detail
        self.never_sent = never_sent
        super().__init__(f"{kind}: {detail}")


@dataclass(frozen=True, kw_only=True, slots=True)
class Send:
    """One HTTP request for a driver to make; ``idempotent`` says whether it may be resent.

    ``timeout`` bounds connecting and writing, ``read_timeout`` each read (a
    long-poll's must outlast the wait it asked the server for).
    """

    method: str
    path: str
    timeout: float
    read_timeout: float
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
Plan = Generator[Step, Reply | None, T]
"""A plan receives a response after a :class:`Send` and ``None`` after a :class:`Pause`."""


def resume(plan: Plan[T], outcome: Reply | TransportFailure | None) -> Step | Finished[T]:
    """Advance ``plan`` with the last step's outcome: its next step, or its result."""
    try:
        if isinstance(outcome, TransportFailure):
            return plan.throw(outcome)
        return plan.send(outcome)
    except StopIteration as stop:
        return Finished(value=stop.value)


def drive(plan: Plan[T], send: Callable[[Send], Reply], sleep: Callable[[float], object]) -> T:
    """Run ``plan`` to its result, blocking: ``send`` makes a request or raises TransportFailure."""
    outcome: Reply | TransportFailure | None = None
    while True:
        step = resume(plan, outcome)
        outcome = None
        if isinstance(step, Finished):
            return step.value
        if isinstance(step, Pause):
            sleep(step.seconds)
            continue
        try:
            outcome = send(step)
        except TransportFailure as exc:
            outcome = exc


class SyncCalls:
    """The blocking gate's calls, for every sync driver: each runs a plan with ``_run``.

    ``SyncRemoteGate`` (httpx) and ``LeanGate`` (``http.client``) differ only
    in how they send; sharing the calls keeps their interfaces identical.
    """

    _planner: Planner

    def check(self, call: ToolCall) -> Decision:
        """Decide ``call``, blocking until a human decides if policy asks one."""
        return self._run(self._planner.check(call))

    def submit(self, call: ToolCall) -> Ticket:
        """A decision now, or the pending request to follow."""
        return self._run(self._planner.submit(call))

    def wait(self, request_id: str, timeout: float | None = None) -> Decision | None:
        """The decision, or ``None`` if still pending after ``timeout`` seconds."""
        return self._run(self._planner.wait(request_id, timeout))

    def cancel(self, request_id: str, *, reason: str | None = None) -> Decision:
        """Withdraw a pending request; it counts as a denial."""
        return self._run(self._planner.cancel(request_id, reason))

    def sandbox(self, tool: str) -> SandboxSpec:
        """The server's sandbox for ``tool`` (what ``tapgate run --sandbox`` applies)."""
        return self._run(self._planner.sandbox(tool))

    def check_many(self, calls: Sequence[ToolCall]) -> list[Decision]:
        """Decide a turn's calls as one batch; one decision per call, in order."""
        from tapgate.client._batch import batch_plan

        return self._run(batch_plan(self._planner, calls))

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Release the driver's connections."""
        raise NotImplementedError

    def _run(self, plan: Plan[T]) -> T:
        raise NotImplementedError


class Planner:
    """Builds the plans for one server: the settings every step depends on."""

    def __init__(
        self,
        *,
        timeout: float,
        retries: int,
        backoff: float,
        long_poll: float,
        retry_for: float = DEFAULT_RETRY_FOR,
    ) -> None:
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.long_poll = long_poll
        self.outage = Outage(retry_for)
        self.expiries = Expiries()

    def submit(self, call: ToolCall, wait: float | None = None) -> Plan[Ticket]:
        """``POST /v1/tool-calls``, holding the answer up to ``wait`` seconds."""
        send = Send(
            method="POST",
            path="/v1/tool-calls",
            json=submit_body(call, wait),
            timeout=self.timeout,
            read_timeout=self._read_timeout(wait),
            idempotent=False,  # see the module docstring: never resent once it may have acted
        )
        response = yield from self.exchange(send)
        ticket = ticket_from(read_json(response), call)
        if ticket.request is not None:  # what caps the window of the wait that follows
            self.expiries.note(ticket.request.id, ticket.request.expires_at)
        return ticket

    def wait(self, request_id: str, timeout: float | None) -> Plan[Decision | None]:
        """Long-poll in slices of ``long_poll`` seconds until decided or ``timeout`` ends.

        Through an outage each poll is retried until the window closes, the
        request expires or ``timeout`` ends, whichever is first.
        """
        deadline = None if timeout is None else time.monotonic() + max(timeout, 0.0)
        while True:
            started = time.monotonic()
            window = self.long_poll if deadline is None else max(deadline - started, 0.0)
            wait = min(self.long_poll, window)
            send = Send(
                method="GET",
                path=_path(request_id),
                params={"wait": f"{wait:g}"},
                timeout=self.timeout,
                read_timeout=self._read_timeout(wait),
            )
            bound = earliest(deadline, self.expiries.deadline(request_id))
            response = yield from self.exchange(send, deadline=bound)
            body = read_json(response, request_id)
            decision = decision_from(body)
            if decision is not None:
                self.expiries.forget(request_id)
                return decision
            self.expiries.note(request_id, body.get("expires_at"))
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
            timeout=self.timeout,
            read_timeout=self._read_timeout(None),
            idempotent=False,
        )
        # Not retried past the request's expiry: by then there is nothing left to withdraw.
        response = yield from self.exchange(send, deadline=self.expiries.deadline(request_id))
        self.expiries.forget(request_id)
        decision = decision_from(read_json(response, request_id))
        if decision is None:
            raise ClientError(
                "the cancelled request is still pending", status=None, code="bad_response"
            )
        return decision

    def sandbox(self, tool: str) -> Plan[SandboxSpec]:
        """``GET /v1/tools/{tool}/sandbox``: how ``tapgate run --sandbox`` confines the tool."""
        send = Send(
            method="GET",
            path="/v1/tools/" + quote(tool, safe="") + "/sandbox",
            timeout=self.timeout,
            read_timeout=self._read_timeout(None),
        )
        response = yield from self.exchange(send)
        from tapgate.client._sandbox import spec_from

        return spec_from(read_json(response))

    def exchange(
        self, send: Send, *, deadline: float | None = None
    ) -> Generator[Step, Reply | None, Reply]:
        """One request with this server's retries (see the module docstring).

        ``deadline`` (monotonic) ends the outage window early: the request's
        expiry, or the caller's own timeout. The last transient answer is
        returned (or the transport failure raised) once retrying ends.
        """
        attempt = 0
        while True:
            try:
                response = yield send
            except TransportFailure as exc:
                if not (send.idempotent or exc.never_sent):
                    raise _unreachable(send, exc) from exc
                pause = self._next_pause(attempt, self._delay(attempt), deadline)
                if pause is None:
                    raise _unreachable(send, exc) from exc
            else:
                assert response is not None
                status = response.status_code
                if not (status == 503 or (status >= 500 and send.idempotent)):
                    if status < 500:  # the server itself answered: it is back
                        self.outage.answered()
                    return response
                delay = max(self._delay(attempt), retry_after(response))
                pause = self._next_pause(attempt, delay, deadline)
                if pause is None:
                    return response
            yield Pause(seconds=pause)
            self.outage.paused(pause)
            attempt += 1

    def _next_pause(self, attempt: int, delay: float, deadline: float | None) -> float | None:
        """The pause before retrying a failure, or ``None`` to stop retrying.

        The first ``retries`` are always made (a blip); after them the outage
        window decides, and its last pause is trimmed to end with it.
        """
        self.outage.failed()
        if attempt < self.retries:
            return delay
        left = self.outage.left(deadline)
        return min(delay, left) if left > 0 else None

    def _read_timeout(self, wait: float | None) -> float:
        # A long-poll's read must outlast the wait it asked the server for.
        return self.timeout + (wait or 0.0)

    def _delay(self, attempt: int) -> float:
        return backoff(self.backoff, attempt)


def _unreachable(send: Send, exc: TransportFailure) -> ClientError:
    return ClientError(f"{send.method} {send.path} failed: {exc}", status=None, code="unreachable")


def _path(request_id: str) -> str:
    return "/v1/tool-calls/" + quote(request_id, safe="")
