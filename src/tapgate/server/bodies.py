"""Request bodies on every route: read once, bounded in time and size, never decoded by aiohttp.

Why this layer exists (aiohttp 3.x, read in its source): the HTTP parser
decodes ``Content-Encoding`` itself, as the body streams in. When a deflate
stream is still incomplete at the end of the body, ``DeflateBuffer.feed_eof``
raises from the parser's *message complete* callback. If the headers came in
an earlier packet, the request is already in its handler, waiting on
``request.read()``; the parser error becomes a new queued 400 "message"
behind it, and the body stream the handler waits on is never finished nor
failed. The handler waits until the client gives up, on every POST route. In
one packet, the same error reaches no handler at all and aiohttp answers a
plain-text ``HTTP/1.0 400`` with an ERROR traceback, and a body that fails to
decode is answered but logged as an "Unhandled exception" while aiohttp
drains it. So:

- the server runs with ``auto_decompress=False`` (:data:`HANDLER_ARGS`): the
  parser never decodes, so a content coding can no longer hang, answer plain
  text or log a traceback;
- :func:`body_middleware`, on every route, refuses a content coding other
  than ``identity`` (415: no platform or agent client compresses requests,
  and a decoder is attack surface before any signature or token check),
  refuses a declared length over the limit (413) before reading, and reads
  the body within ``server.body_timeout`` (408), so a slow, truncated or
  broken (chunked) body is answered in bounded time. aiohttp keeps the bytes
  it read, so the handlers' own ``request.read()`` returns them at once;
- :data:`HANDLER_ARGS` also gives aiohttp's protocol a logger that writes a
  malformed HTTP request (which aiohttp answers itself, before any route is
  known) as one WARNING line instead of an ERROR traceback.

Refusals are JSON in the shape of the route: the documented API error under
the JSON APIs' prefixes, ``{"error": "..."}`` (the webhooks' shape)
elsewhere. Each is logged as one WARNING line on ``tapgate.server.bodies``,
never with a traceback.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from aiohttp import hdrs, web
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.log import server_logger
from aiohttp.typedefs import Middleware

from tapgate.server.api.middleware import Handler
from tapgate.server.api.models import ApiError

__all__ = ["HANDLER_ARGS", "ProtocolLogger", "body_middleware"]

log = logging.getLogger(__name__)

_IDENTITY = frozenset({"", "identity"})


class ProtocolLogger(logging.LoggerAdapter[logging.Logger]):
    """aiohttp's protocol logger, with a client's malformed HTTP as one WARNING line.

    aiohttp answers a request it cannot parse (bad request line, headers or
    framing) itself and logs it with ``logger.exception``: a traceback at
    ERROR for what is the client's mistake, which a fuzzer or a port scanner
    turns into hundreds of tracebacks. Any other exception (a bug: a 500)
    keeps its traceback.
    """

    def exception(self, msg: object, *args: object, exc_info: Any = True, **kwargs: Any) -> None:
        """One line for :class:`HttpProcessingError`; aiohttp's own message and traceback else."""
        if isinstance(exc_info, HttpProcessingError):
            remote = args[0] if args else None
            detail = str(exc_info.message or type(exc_info).__name__)[:200]
            # %r: the parser's message quotes request bytes, which must not forge log lines.
            self.logger.warning(
                "refused a malformed HTTP request from %s: %s %r",
                remote,
                type(exc_info).__name__,
                detail,
            )
            return
        super().exception(msg, *args, exc_info=exc_info, **kwargs)


HANDLER_ARGS: Mapping[str, Any] = {
    "auto_decompress": False,
    "logger": ProtocolLogger(server_logger, {}),
}
"""``web.Application(handler_args=...)``: what every connection's protocol runs with."""


def body_middleware(
    *,
    timeout: float,
    max_size: int,
    json_api_prefixes: tuple[str, ...],
    on_refuse: Callable[[str], None] | None = None,
) -> Middleware:
    """Read every request's body (if any) before its handler, or answer why not.

    ``json_api_prefixes`` are the paths whose errors have the documented API
    shape; placed after the APIs' auth middlewares, so an agent's body is read
    only once its token is known. ``on_refuse`` hears the path of each
    refused request (the webhooks' rejection metric).
    """

    async def read_first(request: web.Request, handler: Handler) -> web.StreamResponse:
        refusal = await _read(request, timeout=timeout, max_size=max_size)
        if refusal is None:
            return await handler(request)
        if on_refuse is not None:
            on_refuse(request.path)
        return _render(request, refusal, json_api_prefixes)

    @web.middleware  # marks it new-style; it need not be a coroutine function itself
    def middleware(request: web.Request, handler: Handler) -> Awaitable[web.StreamResponse]:
        # Not a coroutine itself: the bodiless GETs (10,000 parked long-polls)
        # go straight to their handlers without a frame of ours. can_read_body,
        # not body_exists: the latter is cached on the request (a grown dict each).
        if not request.can_read_body:
            return handler(request)
        return read_first(request, handler)

    return middleware


async def _read(request: web.Request, *, timeout: float, max_size: int) -> ApiError | None:
    """None once the body is read (aiohttp keeps it); otherwise the refusal, logged."""
    refusal = _refused_by_headers(request, max_size)
    if refusal is not None:
        return refusal
    try:
        if request.content.is_eof():
            # All of it came with the headers (an agent's call, a tap): nothing
            # to wait for, so no timer. read() still enforces client_max_size.
            await request.read()
        else:
            async with asyncio.timeout(timeout):
                await request.read()
    except TimeoutError:
        message = f"the body did not arrive within {timeout:g}s"
        return _refuse(request, ApiError(408, "body_timeout", message), message)
    except web.HTTPRequestEntityTooLarge:
        return _too_large(request, max_size, "chunked body over the limit")
    except ConnectionError:
        # The client went away mid-body; nobody will read this answer.
        log.info("client closed the connection before its body arrived on %s", _where(request))
        return ApiError(400, "unreadable_body", "the connection closed before the body arrived")
    except web.RequestPayloadError as exc:
        error = ApiError(400, "unreadable_body", "the body could not be read")
        return _refuse(request, error, str(exc)[:200])
    return None


def _refused_by_headers(request: web.Request, max_size: int) -> ApiError | None:
    """What the headers alone refuse, before a byte of the body is read."""
    encoding = request.headers.get(hdrs.CONTENT_ENCODING, "").strip().lower()
    if encoding not in _IDENTITY:
        return _refuse(
            request,
            ApiError(415, "unsupported_encoding", "send the body without a Content-Encoding"),
            f"Content-Encoding {encoding[:40]!r}",
        )
    length = request.content_length
    if length is not None and length > max_size:
        return _too_large(request, max_size, f"Content-Length {length}")
    return None


def _too_large(request: web.Request, max_size: int, detail: str) -> ApiError:
    message = f"the body is larger than {max_size} bytes"
    return _refuse(request, ApiError(413, "payload_too_large", message), detail)


def _refuse(request: web.Request, error: ApiError, detail: str) -> ApiError:
    log.warning("refused the body of %s: %d %s", _where(request), error.status, detail)
    return error


def _where(request: web.Request) -> str:
    # The path as it came on the wire: decoded, %0D%0A would forge log lines.
    return f"{request.method} {request.rel_url.raw_path}"


def _render(
    request: web.Request, error: ApiError, json_api_prefixes: tuple[str, ...]
) -> web.Response:
    """The refusal in the route's own JSON shape; the connection closes after it.

    Closing: the rest of a refused body is unread, so the next bytes on the
    connection are not a request.
    """
    path = request.path
    if any(path == p or path.startswith(p + "/") for p in json_api_prefixes):
        response = web.json_response(text=error.json(), status=error.status)
    else:
        response = web.json_response({"error": error.body.error.message}, status=error.status)
    response.force_close()
    return response
