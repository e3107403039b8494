r"""Authentication and JSON errors, shared by both agent-facing APIs (``/v1`` and HumanLayer's).

One module so that the agent API and the HumanLayer-compatible API make the
very same bearer-token check (constant-time, via ``Config.agent_for_token``)
and answer every failure in the same JSON shape: their own ``ApiError``\ s,
aiohttp's 404 / 405 / 413, a database outage (a 503 that clients retry) and a
bug (a logged 500). It also holds the small helpers both APIs' handlers use:
the body (read beforehand by :mod:`tapgate.server.bodies`), answering with a
pydantic model, and counting a decision made
at once (such decisions publish no gate event, so the metrics hear of them
here). The error body itself is :class:`~tapgate.server.api.models.ApiError`.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable

import sqlalchemy.exc
from aiohttp import hdrs, web
from aiohttp.typedefs import Middleware
from pydantic import BaseModel

from tapgate.errors import TooManyAsks
from tapgate.server.api.models import ApiError
from tapgate.server.keys import CONFIG, METRICS

__all__ = [
    "AGENT",
    "Handler",
    "authenticate",
    "json_api_middleware",
    "model_response",
    "read_body",
]

log = logging.getLogger(__name__)

AGENT = web.RequestKey("tapgate.agent", str)
"""The authenticated agent's name, set on every request of both APIs but their public paths."""


_MAX_TOKEN = 1024  # longer than any configured token: refuse before comparing
_CHALLENGE = 'Bearer realm="tapgate"'
_HTTP_CODES = {
    400: "bad_request",
    404: "not_found",
    405: "method_not_allowed",
    413: "payload_too_large",
}

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def json_api_middleware(
    prefix: str, *, public: frozenset[str] = frozenset(), name: str = "agent API"
) -> Middleware:
    """Authenticate requests under ``prefix`` and render every error there as JSON.

    Shared by ``/v1`` and the HumanLayer-compatible API so that both make the
    very same token check and answer failures (aiohttp's own 404 / 405 / 413
    and a database outage included) in the same shape. ``public`` paths skip
    authentication.
    """

    async def guarded(request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            if request.path not in public:
                request[AGENT] = authenticate(request)
            return await handler(request)
        except ApiError as exc:
            return _error_response(exc)
        except TooManyAsks as exc:
            return _too_many(request, exc)
        except web.HTTPException as exc:
            if exc.status < 400:
                raise
            code = _HTTP_CODES.get(exc.status, f"http_{exc.status}")
            headers = {k: v for k, v in exc.headers.items() if k == hdrs.ALLOW}
            return _error_response(ApiError(exc.status, code, exc.reason, headers=headers))
        except Exception as exc:
            if _database_unavailable(exc):
                # An outage, not a bug: one line, and a status the client retries.
                log.warning(
                    "%s: database unavailable on %s %s: %r", name, request.method, request.path, exc
                )
                unavailable = ApiError(
                    503,
                    "unavailable",
                    "database unavailable; retry",
                    headers={hdrs.RETRY_AFTER: "1"},
                )
                return _error_response(unavailable)
            log.exception("%s: unexpected error on %s %s", name, request.method, request.path)
            return _error_response(ApiError(500, "internal", "internal error; see the server log"))

    def _too_many(request: web.Request, exc: TooManyAsks) -> web.Response:
        """A 429 with ``Retry-After``, counted; one log line (an agent looping is news)."""
        log.warning("%s: %s on %s %s", name, exc, request.method, request.path)
        request.app[METRICS].asks_refused.labels(agent=exc.agent, limit=exc.limit).inc()
        retry = str(math.ceil(exc.retry_after))
        too_many = ApiError(429, "too_many_asks", str(exc), headers={hdrs.RETRY_AFTER: retry})
        return _error_response(too_many)

    @web.middleware  # marks it new-style; it need not be a coroutine function itself
    def middleware(request: web.Request, handler: Handler) -> Awaitable[web.StreamResponse]:
        # Not a coroutine itself: a request outside ``prefix`` (a webhook, a
        # long-poll of the other API) goes straight to its handler without a
        # frame of ours parked for its whole life (10,000 long-polls, ~1 KB each).
        if request.path != prefix and not request.path.startswith(prefix + "/"):
            return handler(request)
        return guarded(request, handler)

    return middleware


_UNAVAILABLE_SQLSTATES = frozenset({"57P01", "57P02", "57P03", "53300"})
"""Admin / crash shutdown, "cannot connect now" (starting up), too many connections."""


def _database_unavailable(exc: BaseException) -> bool:
    """Whether ``exc`` means the database cannot be reached (PostgreSQL down or restarting).

    Deliberately narrow: a schema or query bug (SQLite's "no such table" is an
    ``OperationalError`` too) must stay a logged 500, not a 503 that clients
    retry for ever.
    """
    if isinstance(exc, ConnectionError | TimeoutError | sqlalchemy.exc.TimeoutError):
        return True  # refused / reset connections, connect timeouts, an exhausted pool
    if isinstance(exc, OSError) and "Connect call failed" in str(exc):
        return True  # asyncio's summary when every address of the host refused
    if not isinstance(exc, sqlalchemy.exc.DBAPIError):
        return False
    if exc.connection_invalidated or isinstance(exc, sqlalchemy.exc.InterfaceError):
        return True
    code = getattr(exc.orig, "sqlstate", None) or getattr(exc.orig, "pgcode", None)
    if isinstance(code, str) and (code.startswith("08") or code in _UNAVAILABLE_SQLSTATES):
        return True  # SQLSTATE class 08: connection exceptions
    return "database is locked" in str(exc.orig)


def authenticate(request: web.Request) -> str:
    """The agent named by the bearer token, or a 401 that tells nothing about near misses."""
    scheme, _, token = request.headers.get(hdrs.AUTHORIZATION, "").partition(" ")
    token = token.strip(" ")
    if scheme.lower() != "bearer" or not token:
        raise ApiError(
            401, "unauthorized", "missing bearer token", headers={hdrs.WWW_AUTHENTICATE: _CHALLENGE}
        )
    agent = None
    if len(token) <= _MAX_TOKEN and _encodable(token):
        agent = request.app[CONFIG].agent_for_token(token)
    if agent is None:
        raise ApiError(
            401,
            "unauthorized",
            "invalid bearer token",
            headers={hdrs.WWW_AUTHENTICATE: f'{_CHALLENGE}, error="invalid_token"'},
        )
    return agent


def _encodable(token: str) -> bool:
    # Header bytes that are not UTF-8 arrive as surrogates, which .encode() refuses.
    try:
        token.encode()
    except UnicodeEncodeError:
        return False
    return True


def _error_response(exc: ApiError) -> web.Response:
    return web.json_response(text=exc.json(), status=exc.status, headers=exc.headers)


def model_response(
    model: BaseModel, status: int = 200, headers: dict[str, str] | None = None
) -> web.Response:
    """``model`` as the JSON body, serialised by pydantic (one pass, no dict in between)."""
    return web.json_response(text=model.model_dump_json(), status=status, headers=headers)


async def read_body(request: web.Request) -> bytes:
    """The raw body, already read (bounded in time and size) by :mod:`tapgate.server.bodies`.

    aiohttp keeps what it read, so this returns at once; a body that could
    not be read never reaches a handler.
    """
    return await request.read()
