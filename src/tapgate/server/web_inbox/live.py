"""``GET /inbox/events``: what changed for the signed-in approver, as server-sent events.

The inbox's script listens here so a request decided elsewhere (a Slack tap,
a LINE tap, another browser, the heartbeat's expiry) leaves the page at once,
with who decided it, and a new request appears without a reload. Only
requests the approver is asked about are sent, and only their id, status,
batch and decider: the card itself is fetched as HTML through the same
escaping as the page. The stream ends at server shutdown with everything else
(:data:`tapgate.server.api.stream.SHUTDOWN`).

The session is looked up again before every frame and every heartbeat: a
session revoked (from the Sessions page, another tab's sign-out) or expired
while its page is open gets ``event: signed_out`` and the stream ends, so it
never learns of one more request. One indexed read per frame per open page:
an inbox has a handful of approvers, not thousands.
"""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from typing import Any

from aiohttp import hdrs, web

from tapgate.gate.models import GateEvent
from tapgate.server.api.stream import HEARTBEAT_INTERVAL, SHUTDOWN
from tapgate.server.keys import CLOCK, GATE, SIGN_INS
from tapgate.server.web_inbox.guard import COOKIE, SESSION

__all__ = ["inbox_events"]

_QUEUE = 256


def _frame(event: GateEvent) -> bytes:
    r = event.request
    data = {
        "id": r.id,
        "status": r.status,
        "by": r.resolved_by,
        "batch": r.batch_id,
        "reason": r.resolution_reason,
    }
    return f"event: {event.kind}\ndata: {json.dumps(data)}\n\n".encode()


async def inbox_events(request: web.Request) -> web.StreamResponse:
    """Stream the approver's request events until the client leaves or the server stops."""
    approver = request[SESSION].approver
    sign_ins, cookie = request.app[SIGN_INS], request.cookies.get(COOKIE)
    response = web.StreamResponse(
        headers={
            hdrs.CONTENT_TYPE: "text/event-stream",
            hdrs.CACHE_CONTROL: "no-store",
            "X-Accel-Buffering": "no",
        }
    )
    bus, clock = request.app[GATE].bus, request.app[CLOCK]
    async with bus.stream(_QUEUE, lambda ev: approver in ev.request.approvers) as events:
        await response.prepare(request)
        stopper = asyncio.ensure_future(request.app[SHUTDOWN].wait())
        getter: asyncio.Future[GateEvent] | None = None
        try:
            await response.write(b": connected\n\n")
            while not stopper.done():
                getter = getter or asyncio.ensure_future(events.queue.get())
                beat = asyncio.ensure_future(
                    clock.sleep_until(clock.now() + timedelta(seconds=HEARTBEAT_INTERVAL))
                )
                racers: set[asyncio.Future[Any]] = {stopper, getter, beat}
                await asyncio.wait(racers, return_when=asyncio.FIRST_COMPLETED)
                beat.cancel()
                if events.dropped:
                    await response.write(b"event: overflow\ndata: {}\n\n")  # the page reloads
                    break
                if (getter.done() or beat.done()) and await sign_ins.session(cookie) is None:
                    await response.write(b"event: signed_out\ndata: {}\n\n")  # the page reloads
                    break
                if getter.done():
                    frame, getter = _frame(getter.result()), None
                    await response.write(frame)
                elif beat.done():
                    await response.write(b": heartbeat\n\n")
        except ConnectionError:
            pass  # the tab was closed
        finally:
            stopper.cancel()
            if getter is not None:
                getter.cancel()
    return response
