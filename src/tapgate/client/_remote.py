"""The remote gates: :class:`RemoteGate` (async) and :class:`SyncRemoteGate`, over the HTTP API.

Both are thin drivers of the plans in :mod:`tapgate.client._plans`: they make
the requests and sleeps a plan asks for, with ``httpx.AsyncClient`` or
``httpx.Client``. Everything else (bodies, parsing, errors, retries,
long-poll slices) is shared, so the two cannot drift apart.
"""

from __future__ import annotations

import asyncio
import functools
import os
import ssl
import time
from collections.abc import Awaitable, Callable, Sequence
from types import TracebackType

import httpx

from tapgate.client._plans import (
    LONG_POLL,
    Finished,
    Pause,
    Plan,
    Planner,
    Send,
    SyncCalls,
    T,
    TransportFailure,
    drive,
    resume,
)
from tapgate.client._retrying import DEFAULT_RETRY_FOR
from tapgate.client._sandbox import SandboxSpec
from tapgate.client._wire import without_credentials
from tapgate.gate.models import Decision, Ticket, ToolCall

__all__ = ["LONG_POLL", "RemoteGate", "SyncRemoteGate"]

_USER_AGENT = "tapgate-client"


def _tls_context() -> ssl.SSLContext:
    """httpx's default TLS context, built once per trust-store setting in a process.

    httpx builds one in every client, parsing certifi's bundle (~15 ms of
    CPU), and a :class:`RemoteGate` outside ``async with`` makes a client per
    call. httpx reads ``SSL_CERT_FILE`` and ``SSL_CERT_DIR`` when it builds the
    context, so they key the cache: changing them still takes effect.
    """
    return _tls_context_for(os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))


@functools.lru_cache(maxsize=4)
def _tls_context_for(cert_file: str | None, cert_dir: str | None) -> ssl.SSLContext:
    return httpx.create_ssl_context()  # reads the two variables itself


def _headers(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", "User-Agent": _USER_AGENT}


class RemoteGate:
    """The in-process :class:`~tapgate.gate.gate.Gate`'s agent half, over HTTP.

    An agent that runs apart from the tapgate server swaps its ``Gate`` for
    this and keeps calling ``check`` / ``submit`` / ``wait``. The agent's name
    comes from ``token`` on the server, so ``ToolCall.agent`` is ignored.

    ``check`` submits and then long-polls in slices of ``long_poll`` seconds
    (which must not exceed the server's ``max_wait``); each HTTP read timeout
    is ``timeout`` plus the slice. Transport failures and 502 / 503 / 504 are
    retried ``retries`` times with capped exponential backoff from ``backoff``
    seconds (a ``Retry-After`` is a floor under the delay): reads always, a
    submit or a cancel only when the server cannot have acted on it (no
    connection was made, or a 503), since a submit resent after its answer
    was lost could make a new request after a denial.
    Beyond those, retrying goes on for ``retry_for`` seconds of an outage
    (default 60; 0 turns it off), never past the request's ``expires_at``:
    a ``check`` or ``wait`` in progress rides out a server restart or a
    replica switch and re-attaches to its request by id. A wait that gives
    up raises ``ClientError`` (code ``unreachable``, or the 5xx's own).
    HTTP errors raise :class:`~tapgate.client.ClientError` (401:
    :class:`~tapgate.client.Unauthorized`), ``RequestNotFound`` or
    ``AlreadyResolved`` with the server's message.

    ``sleep`` waits out a backoff pause (default :func:`asyncio.sleep`): tests
    inject one that records the pauses instead of waiting for them.

    Inside ``async with`` (until :meth:`aclose`) calls share one connection
    pool. Outside it each call opens and closes its own connection, so a gate
    used from several event loops (a sync tool guarded by it runs each check
    under ``asyncio.run``) never touches a connection of a finished loop.
    """

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout: float = 10.0,
        retries: int = 3,
        transport: httpx.AsyncBaseTransport | None = None,
        backoff: float = 0.5,
        long_poll: float = LONG_POLL,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
        retry_for: float = DEFAULT_RETRY_FOR,
    ) -> None:
        self.base_url = base_url
        self._token = token
        self._transport = transport
        self._sleep = sleep
        self._planner = Planner(
            timeout=timeout,
            retries=retries,
            backoff=backoff,
            long_poll=long_poll,
            retry_for=retry_for,
        )
        self._pool: httpx.AsyncClient | None = None

    def __repr__(self) -> str:
        return f"RemoteGate({without_credentials(self.base_url)!r})"  # never the token

    async def check(self, call: ToolCall) -> Decision:
        """Decide ``call``, waiting as long as it takes for a human if policy asks one."""
        return await self._run(self._planner.check(call))

    async def submit(self, call: ToolCall) -> Ticket:
        """A decision now, or the pending request to follow (see ``ticket_from`` for its gaps)."""
        return await self._run(self._planner.submit(call))

    async def wait(self, request_id: str, timeout: float | None = None) -> Decision | None:
        """The decision, or ``None`` while still pending after ``timeout`` seconds, if given."""
        return await self._run(self._planner.wait(request_id, timeout))

    async def cancel(self, request_id: str, *, reason: str | None = None) -> Decision:
        """Withdraw a pending request the agent no longer needs; it counts as a denial."""
        return await self._run(self._planner.cancel(request_id, reason))

    async def sandbox(self, tool: str) -> SandboxSpec:
        """The server's sandbox for ``tool`` (what ``tapgate run --sandbox`` applies)."""
        return await self._run(self._planner.sandbox(tool))

    async def check_many(self, calls: Sequence[ToolCall]) -> list[Decision]:
        """Decide a turn's calls as one batch (one card); one decision per call, in order."""
        from tapgate.client._batch import batch_plan

        return await self._run(batch_plan(self._planner, calls))

    async def __aenter__(self) -> RemoteGate:
        if self._pool is None:
            self._pool = self._client()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the shared connection pool (a no-op outside ``async with``)."""
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.aclose()

    def _client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            base_url=self.base_url,
            headers=_headers(self._token),
            transport=self._transport,
            verify=_tls_context(),
        )

    async def _run(self, plan: Plan[T]) -> T:
        if self._pool is not None:
            return await self._drive(self._pool, plan)
        async with self._client() as client:
            return await self._drive(client, plan)

    async def _drive(self, client: httpx.AsyncClient, plan: Plan[T]) -> T:
        outcome: httpx.Response | TransportFailure | None = None
        while True:
            step = resume(plan, outcome)
            outcome = None
            if isinstance(step, Finished):
                return step.value
            if isinstance(step, Pause):
                await self._sleep(step.seconds)
                continue
            try:
                outcome = await client.send(_request(client, step))
            except httpx.TransportError as exc:
                outcome = _failure(exc)


class SyncRemoteGate(SyncCalls):
    """:class:`RemoteGate` for sync agent frameworks: the same calls, blocking.

    Built on ``httpx.Client`` and the same plans as :class:`RemoteGate`, so it
    behaves identically (retries, the ``retry_for`` window, slices, errors).
    It holds one connection pool, shareable between threads; close it with
    :meth:`close` or ``with``.
    ``sleep`` waits out a backoff pause (default :func:`time.sleep`).
    """

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout: float = 10.0,
        retries: int = 3,
        transport: httpx.BaseTransport | None = None,
        backoff: float = 0.5,
        long_poll: float = LONG_POLL,
        sleep: Callable[[float], object] = time.sleep,
        retry_for: float = DEFAULT_RETRY_FOR,
    ) -> None:
        self.base_url = base_url
        self._sleep = sleep
        self._planner = Planner(
            timeout=timeout,
            retries=retries,
            backoff=backoff,
            long_poll=long_poll,
            retry_for=retry_for,
        )
        self._client = httpx.Client(
            base_url=base_url, headers=_headers(token), transport=transport, verify=_tls_context()
        )

    def __repr__(self) -> str:
        return f"SyncRemoteGate({without_credentials(self.base_url)!r})"

    def close(self) -> None:
        """Close the connection pool."""
        self._client.close()

    def _run(self, plan: Plan[T]) -> T:
        return drive(plan, self._send, self._sleep)

    def _send(self, step: Send) -> httpx.Response:
        try:
            return self._client.send(_request(self._client, step))
        except httpx.TransportError as exc:
            raise _failure(exc) from exc


def _request(client: httpx.AsyncClient | httpx.Client, step: Send) -> httpx.Request:
    timeout = httpx.Timeout(step.timeout, read=step.read_timeout)
    return client.build_request(
        step.method, step.path, json=step.json, params=step.params, timeout=timeout
    )


def _failure(exc: httpx.TransportError) -> TransportFailure:
    """httpx's error as the plans read it; the original stays the cause, for tracebacks."""
    never_sent = isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout)
    failure = TransportFailure(type(exc).__name__, str(exc), never_sent=never_sent)
    failure.__cause__ = exc
    return failure
