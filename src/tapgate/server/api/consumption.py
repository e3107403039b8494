"""Approvals consumed once: the agent API marks an approval used when it tells the agent.

decision 0012-an-approval-authorises-one-execution: an approval of scope once authorises one
execution.
It is consumed when the agent is first told of it: the answer of a submit
that waited, of a long-poll or read by id, or of a batch. After that an
identical re-issue asks anew, while reads by id keep answering "approved".
"""

from __future__ import annotations

from collections.abc import Iterable

from aiohttp import web

from tapgate.gate.batching import consume_all
from tapgate.gate.models import Request
from tapgate.server.keys import GATE

__all__ = ["told", "told_all"]


async def told(request: web.Request, current: Request) -> None:
    """``current`` is about to be shown to its agent: consume it if it is a fresh approval."""
    if _fresh(current):
        await request.app[GATE].consume(current.id)


async def told_all(request: web.Request, shown: Iterable[Request]) -> None:
    """:func:`told` for a batch's calls, consumed together in one transaction."""
    fresh = [current.id for current in shown if _fresh(current)]
    if fresh:
        await consume_all(request.app[GATE], fresh)


def _fresh(current: Request) -> bool:
    return current.status == "approved" and current.scope == "once" and current.consumed_at is None
