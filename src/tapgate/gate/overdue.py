"""A read past a request's deadline reports it expired, whether or not a sweep has run.

The heartbeat's sweep expires overdue requests every few seconds, and a
waiter parked on one expires it at its deadline; a plain read between the
two would still say ``pending`` after ``expires_at``, although a tap at that
moment is refused as too late. :func:`as_of_now` makes every read agree
with the tap: it expires the request (by the policy's ``on_timeout``, the
same transition the sweep makes, recorded and announced once) and returns it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tapgate.gate.models import Request

if TYPE_CHECKING:
    from tapgate.gate.gate import Gate

__all__ = ["as_of_now"]


async def as_of_now(gate: Gate, request: Request) -> Request:
    """``request`` as a read must report it now: expired once past its deadline."""
    if request.is_pending and request.expires_at <= gate.clock.now():
        return await gate.wait_for(request.id, timeout=0, known=request)
    return request
