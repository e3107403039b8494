"""Narrow views of the gate: the part of it each module that does not decide uses.

A module handed the whole :class:`~tapgate.gate.gate.Gate` can reach
anything (submit, resolve, the store, the policy), so its signature says
nothing about what it touches, and a test of it must build a gate. These
protocols declare exactly what one kind of caller uses; ``Gate`` satisfies
each structurally, so callers keep passing the gate and nothing imports a
concrete class to do so. The tap pipeline (``decisions.taps`` and what it
calls) still takes the ``Gate``: deciding is what the gate is for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from tapgate.gate.bus import EventBus
    from tapgate.gate.clock import Clock
    from tapgate.gate.directory import Directory
    from tapgate.gate.models import Request, RequestStatus
    from tapgate.policy.engine import Policy
    from tapgate.store import Store

__all__ = [
    "ApproverStore",
    "ClockedStore",
    "PendingQueue",
    "PolicyLookup",
    "QuestionLookup",
    "Stranding",
]


class ClockedStore(Protocol):
    """The store and the gate's clock: a table kept in the gate's time (the webhook inbox)."""

    @property
    def store(self) -> Store: ...

    @property
    def clock(self) -> Clock: ...


class ApproverStore(ClockedStore, Protocol):
    """:class:`ClockedStore` and the directory: rows that belong to a known approver.

    Sign-in links and web sessions, an approver's own grants from the chat.
    """

    @property
    def directory(self) -> Directory: ...


class QuestionLookup(Protocol):
    """Reading requests and who an id is: enough to find the question a typed reference names."""

    @property
    def directory(self) -> Directory: ...

    async def get_request(self, request_id: str) -> Request: ...

    async def list_requests(
        self, *, tool: str, id_prefix: str, limit: int, status: RequestStatus | None = ...
    ) -> list[Request]: ...


class PolicyLookup(Protocol):
    """A request as stored and the policy now: what a remember button may still offer."""

    @property
    def policy(self) -> Policy: ...

    async def get_request(self, request_id: str) -> Request: ...


class PendingQueue(Protocol):
    """An approver's pending requests, paged and counted, with the clock and the policy's offers."""

    @property
    def clock(self) -> Clock: ...

    @property
    def policy(self) -> Policy: ...

    async def list_requests(
        self, *, status: RequestStatus, approver: str, limit: int, offset: int
    ) -> list[Request]: ...

    async def count_requests(
        self, *, status: RequestStatus, approver: str | None = None
    ) -> int: ...


class Stranding(Protocol):
    """Hearing of requests, whom they reach, and ending those nobody can be reached for."""

    @property
    def directory(self) -> Directory: ...

    @property
    def bus(self) -> EventBus: ...

    async def give_up(self, request_ids: list[str]) -> list[Request]: ...
