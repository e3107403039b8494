"""The machinery every fake platform shares: a real aiohttp server on
127.0.0.1, port 0, that records each request and applies scripted faults.

A platform subclass declares its endpoint names, routes requests to them with
:meth:`FakeServer._endpoint`, and implements the normal behaviour as an
*action*: a coroutine from the recorded request to a response. Faults wrap
the action here, so "perform, then drop" means the same on every platform.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Literal, Self
from urllib.parse import parse_qsl

from aiohttp import web

from tests.fakes._faults import Fault, FaultScript

BodyKind = Literal["json", "form", "empty", "invalid_json", "other"]
Action = Callable[["RecordedRequest"], Awaitable[web.Response]]
Clock = Callable[[], float]

# A hung handler that nobody cancels must not keep the test waiting at close().
_SHUTDOWN_TIMEOUT = 0.5


@dataclass(frozen=True, kw_only=True)
class RecordedRequest:
    """One request as the fake received it, faulted or not.

    ``headers`` has lower-cased names. ``body`` is the parsed JSON value for
    JSON, a ``dict`` for form-encoded bodies, else ``None``; ``body_kind``
    says which. ``time`` comes from the fake's clock (monotonic by default).
    """

    endpoint: str
    method: str
    path: str
    query: Mapping[str, str]
    headers: Mapping[str, str]
    content_type: str
    body_kind: BodyKind
    body: Any
    raw_body: bytes
    time: float
    fault: Fault | None

    @property
    def args(self) -> dict[str, Any]:
        """Query parameters merged with a dict body: what an RPC method receives."""
        merged: dict[str, Any] = dict(self.query)
        if isinstance(self.body, dict):
            merged.update(self.body)
        return merged


class FakeServer:
    """Lifecycle, recording and fault application for one fake platform.

    Use as ``async with Fake(...) as fake:`` or ``await fake.start()`` /
    ``await fake.close()``; both must run inside the test's event loop.
    """

    endpoints: tuple[str, ...] = ()
    _url_suffix = ""

    def __init__(self, *, clock: Clock = time.monotonic) -> None:
        self.clock = clock
        self.requests: list[RecordedRequest] = []
        self._faults = FaultScript(self.endpoints)
        self._app = web.Application()
        self._runner: web.AppRunner | None = None
        self._url: str | None = None
        self._closing = asyncio.Event()

    # lifecycle

    async def start(self) -> Self:
        """Bind 127.0.0.1 on a free port and start serving."""
        if self._runner is not None:
            raise RuntimeError("fake already started")
        # handler_cancellation: when a client gives up (timeout, drop), the
        # handler is cancelled, so a non-delivering timeout really never delivers.
        runner = web.AppRunner(
            self._app,
            handler_cancellation=True,
            shutdown_timeout=_SHUTDOWN_TIMEOUT,
            access_log=None,
        )
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        self._runner = runner
        host, port = runner.addresses[0][:2]
        self._url = f"http://{host}:{port}{self._url_suffix}"
        return self

    async def close(self) -> None:
        """Stop serving; hung handlers are released. Safe to call twice."""
        self._closing.set()
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    @property
    def url(self) -> str:
        """Base URL to give the SDK; only valid once started."""
        if self._url is None:
            raise RuntimeError("fake not started")
        return self._url

    # scripting and inspection

    def script(self, endpoint: str, *faults: Fault) -> None:
        """Apply ``faults`` to the next calls of ``endpoint``, one fault per call."""
        self._faults.add(endpoint, faults)

    def pending_faults(self, endpoint: str) -> tuple[Fault, ...]:
        """Faults scripted for ``endpoint`` and not yet applied."""
        return self._faults.pending(endpoint)

    def requests_to(self, endpoint: str) -> list[RecordedRequest]:
        """Recorded requests for one endpoint, in arrival order."""
        return [r for r in self.requests if r.endpoint == endpoint]

    # for subclasses

    def _endpoint(self, name: str, action: Action) -> Callable[[web.Request], Awaitable[Any]]:
        """An aiohttp handler that records, applies the next fault, then acts."""

        async def handler(request: web.Request) -> web.StreamResponse:
            recorded = await self._record(request, name, self._faults.pop(name))
            return await self._apply(request, recorded, action)

        return handler

    def _fault_body(self, code: int) -> Any:
        """The platform's usual body for an error status."""
        return {"message": f"HTTP {code}"}

    def _extra_headers(self) -> dict[str, str]:
        """Headers the platform puts on every answer (request ids)."""
        return {}

    def _json(
        self, data: Any, status: int = 200, headers: Mapping[str, str] | None = None
    ) -> web.Response:
        return web.json_response(
            data, status=status, headers={**self._extra_headers(), **(headers or {})}
        )

    # internals

    async def _record(
        self, request: web.Request, name: str, fault: Fault | None
    ) -> RecordedRequest:
        raw = await request.read()
        body_kind, body = _parse_body(request.content_type, raw)
        recorded = RecordedRequest(
            endpoint=name,
            method=request.method,
            path=request.path,
            query=dict(request.query),
            headers={k.lower(): v for k, v in request.headers.items()},
            content_type=request.content_type,
            body_kind=body_kind,
            body=body,
            raw_body=raw,
            time=self.clock(),
            fault=fault,
        )
        self.requests.append(recorded)
        return recorded

    async def _apply(
        self, request: web.Request, recorded: RecordedRequest, action: Action
    ) -> web.StreamResponse:
        fault = recorded.fault
        if fault is None:
            return await action(recorded)
        if fault.kind == "status":
            return self._status_response(fault)
        if fault.kind == "drop":
            return await self._drop(request)
        if fault.kind == "drop_after_success":
            await action(recorded)
            return await self._drop(request)
        # timeout
        response = await action(recorded) if fault.deliver else None
        if await self._hang(fault.seconds):
            return await self._drop(request)
        return response if response is not None else await action(recorded)

    def _status_response(self, fault: Fault) -> web.Response:
        headers = {**self._extra_headers(), **fault.headers}
        body = self._fault_body(fault.code) if fault.body is None else fault.body
        if isinstance(body, str | bytes):
            return web.Response(status=fault.code, body=body, headers=headers)
        return web.json_response(body, status=fault.code, headers=headers)

    async def _hang(self, seconds: float) -> bool:
        """Sleep, waking early when the fake closes; True if it is closing."""
        try:
            await asyncio.wait_for(self._closing.wait(), seconds)
        except TimeoutError:
            return False
        return True

    async def _drop(self, request: web.Request) -> web.StreamResponse:
        if request.transport is not None:
            request.transport.close()
        # The closed transport cancels this handler (handler_cancellation); the
        # wait only bounds the case where that somehow does not happen.
        await self._hang(_SHUTDOWN_TIMEOUT)
        raise web.HTTPServiceUnavailable  # never reaches the client: no transport


def _parse_body(content_type: str, raw: bytes) -> tuple[BodyKind, Any]:
    if not raw:
        return "empty", None
    if content_type == "application/json":
        try:
            return "json", json.loads(raw)
        except ValueError:
            return "invalid_json", None
    if content_type == "application/x-www-form-urlencoded":
        return "form", dict(parse_qsl(raw.decode(), keep_blank_values=True))
    return "other", None
