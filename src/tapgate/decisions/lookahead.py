"""Reads started early, beside a write, and taken once by the event they were started for.

A webhook stores a tap before it answers and decides it after (record before
acknowledging); before deciding, the tap ends the approver's pending typed
reason, if any (:meth:`Reasons.interrupt <tapgate.decisions.typed_reasons.Reasons.interrupt>`),
which is one more read of the store. Started while the event's record is
being committed, that read shares the database thread's turn with the record
instead of costing a round trip of its own after the 200, on the path from
a tap to the waiting agent's resume.

A read is keyed by the event it was started for and taken at most once, by
that event: a result never outlives the event, so a later event always reads
afresh. An event that does not take its read drops it (:meth:`Lookahead.drop`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterable
from typing import Any, Generic, TypeVar

__all__ = ["Lookahead"]

T = TypeVar("T")


class Lookahead(Generic[T]):
    """The reads started for events not yet applied, by event id."""

    def __init__(self) -> None:
        self._started: dict[str, asyncio.Task[T]] = {}

    def start(self, event: str, read: Coroutine[Any, Any, T]) -> None:
        """Start ``read`` now for ``event`` (a second start for one event replaces the first)."""
        self.drop([event])
        self._started[event] = asyncio.ensure_future(read)

    def take(self, event: str | None) -> asyncio.Task[T] | None:
        """``event``'s read, once; ``None`` if none was started (a replay) or it was taken."""
        return self._started.pop(event, None) if event is not None else None

    def drop(self, events: Iterable[str]) -> None:
        """Forget the reads of ``events`` that were not taken, cancelling any still running.

        Cancelling one that already ended also marks its error as seen: a
        read nobody needed reports nothing.
        """
        for event in events:
            task = self._started.pop(event, None)
            if task is not None:
                task.cancel()
