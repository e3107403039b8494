"""``GET /v1/events``: the server-sent event stream of an agent's own requests.

Owns the stream's life: subscribe before the headers go out (no event falls
in between), forward only the caller's events, send a comment line every
``HEARTBEAT_INTERVAL`` so proxies keep a quiet stream open, end with an
``overflow`` event when a slow client lost events, drop a client that stops
reading, and end every stream at once when the server shuts down
(:data:`SHUTDOWN`, which long-polls share).
"""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta
from typing import Any

from aiohttp import hdrs, web

from tapgate.gate.bus import Subscription
from tapgate.gate.models import GateEvent
from tapgate.server.api.events import event_out
from tapgate.server.api.middleware import AGENT
from tapgate.server.keys import CLOCK, CONFIG, GATE

__all__ = [
    "HEARTBEAT_INTERVAL",
    "SHUTDOWN",
    "STREAM_END_TIMEOUT",
    "STREAM_QUEUE_SIZE",
    "stream_events",
]

log = logging.getLogger(__name__)

HEARTBEAT_INTERVAL = 15.0
"""Seconds between SSE comment lines: keeps proxies from closing a quiet stream."""

STREAM_QUEUE_SIZE = 256
"""Events buffered per SSE client; a client that falls further behind loses the oldest."""

_BEAT = timedelta(seconds=HEARTBEAT_INTERVAL)
STREAM_END_TIMEOUT = 1.0
"""Seconds the end of an SSE stream may wait for the client before the connection is dropped."""
SHUTDOWN = web.AppKey("tapgate.api_shutdown", asyncio.Event)
"""Set when the server shuts down: event streams and parked long-polls end at once."""


async def stream_events(request: web.Request) -> web.StreamResponse:
    """``GET /v1/events``: server-sent events about the caller's own requests."""
    response = web.StreamResponse(
        headers={
            hdrs.CONTENT_TYPE: "text/event-stream",
            hdrs.CACHE_CONTROL: "no-cache",
            "X-Accel-Buffering": "no",  # nginx would otherwise buffer the stream
        }
    )
    agent = request[AGENT]
    # Subscribe before the headers go out, so no event falls between the two;
    # only this agent's events are queued (see core.events.Subscription).
    bus = request.app[GATE].bus
    async with bus.stream(STREAM_QUEUE_SIZE, lambda e: e.request.agent == agent) as events:
        await response.prepare(request)
        stopper = asyncio.ensure_future(request.app[SHUTDOWN].wait())
        try:
            if await _send(request, response, b": connected\n\n", stopper):
                await _pump(request, response, events, stopper)
            await _end(request, response)
        except ConnectionError:
            pass  # the client went away (reset, or "Connection lost" while draining)
        except Exception:  # the headers are out: the stream can only end, not turn into a 500
            log.exception("agent API: event stream for %s failed", agent)
        finally:
            stopper.cancel()
    return response


async def _end(request: web.Request, response: web.StreamResponse) -> None:
    """Finish the stream, or drop the connection if the client does not take the end.

    aiohttp would otherwise ``write_eof`` after the handler with no time
    limit, waiting for a client that stopped reading to drain its buffers:
    that held a server's shutdown for ~30 s.
    """
    try:
        await asyncio.wait_for(response.write_eof(), STREAM_END_TIMEOUT)
    except TimeoutError:
        if request.transport is not None:
            request.transport.abort()


async def _pump(
    request: web.Request,
    response: web.StreamResponse,
    events: Subscription,
    stopper: asyncio.Future[Any],
) -> None:
    """Forward the agent's events, beat every ``HEARTBEAT_INTERVAL``, stop at shutdown.

    A client that fell so far behind that events were lost is told so with
    an ``overflow`` event and the stream ends: it must re-read what it waits
    for rather than trust a stream with a gap.
    """
    clock = request.app[CLOCK]
    getter: asyncio.Future[GateEvent] | None = None
    next_beat = clock.now() + _BEAT
    try:
        while True:
            getter = getter or asyncio.ensure_future(events.queue.get())
            beat = asyncio.ensure_future(clock.sleep_until(next_beat))
            racers: set[asyncio.Future[Any]] = {stopper, getter, beat}
            try:
                await asyncio.wait(racers, return_when=asyncio.FIRST_COMPLETED)
            finally:
                beat.cancel()
            if stopper.done():
                return
            if events.dropped:
                frame = f'event: overflow\ndata: {{"dropped": {events.dropped}}}\n\n'.encode()
                await _send(request, response, frame, stopper)
                return
            if getter.done():
                event, getter = getter.result(), None
                frame = _frame(event)
            else:
                frame = b": heartbeat\n\n"
                next_beat = clock.now() + _BEAT
            if not await _send(request, response, frame, stopper):
                return
    finally:
        if getter is not None:
            getter.cancel()


async def _send(
    request: web.Request, response: web.StreamResponse, frame: bytes, stopper: asyncio.Future[Any]
) -> bool:
    """Write one frame; False, with the connection dropped, if the client stalls or we stop.

    A client that stops reading makes ``write`` wait for ever once the socket
    buffers fill. Racing the write against shutdown keeps SIGTERM prompt, and
    ``server.stream_write_timeout`` frees a stalled client's connection; aborting
    the transport is the only way out (a graceful end would wait to drain).
    """
    write = asyncio.ensure_future(response.write(frame))
    try:
        await asyncio.wait(
            {write, stopper},
            timeout=request.app[CONFIG].server.stream_write_timeout,
            return_when=asyncio.FIRST_COMPLETED,
        )
        if write.done():
            write.result()  # a client that went away raises a ConnectionError here
            return True
    finally:
        write.cancel()  # no-op when done; never orphaned if we are cancelled
    if request.transport is not None:
        request.transport.abort()
    if not stopper.done():
        log.info("agent API: event stream for %s dropped (client not reading)", request[AGENT])
    return False


def _frame(event: GateEvent) -> bytes:
    # model_dump_json escapes newlines inside strings, so the data stays on one line.
    return f"event: {event.kind}\ndata: {event_out(event).model_dump_json()}\n\n".encode()
