"""An approval from a tap: counted once per approver, deciding when it completes the quorum.

:func:`tap <tapgate.decisions.taps.tap>` sends every approval here and every deny
to :meth:`Gate.resolve <tapgate.gate.gate.Gate.resolve>` (one deny denies).
The counting, and the one compare-and-set that decides, happen in the store
(:mod:`tapgate.store.approvals`); this module turns what the store did
into what the gate does for any decision (wake the waiters, tell the bus) or
into a :class:`Progress` that decided nothing, which :mod:`tapgate.decisions.taps`
answers with its own sentence.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from tapgate.errors import DuplicateEvent
from tapgate.gate.gate import Gate
from tapgate.gate.models import Request, Scope
from tapgate.gate.records import grant_maker
from tapgate.store.lifecycle import Change

__all__ = ["Progress", "approve"]

ProgressKind = Literal["partial", "counted", "self_approval"]


@dataclass(frozen=True, kw_only=True, slots=True)
class Progress:
    """An approval that did not decide: counted short of the quorum, counted before, or refused.

    ``self_approval``: the tapper owns the agent (refused and audited).
    ``request.approvals`` lists who approved so far.
    """

    kind: ProgressKind
    request: Request


async def approve(
    gate: Gate,
    request_id: str,
    *,
    by: str,
    scope: Scope = "once",
    grant_ttl: float | None = None,
    grant_uses: int | None = None,
    reason: str | None = None,
    detail: dict[str, Any] | None = None,
    event: tuple[str, str] | None = None,
    edited: Mapping[str, Any] | None = None,
) -> Request | Progress:
    """Approve as ``by``: the decided request, a :class:`Progress`, or the gate's refusal.

    Raises what :meth:`Gate.resolve <tapgate.gate.gate.Gate.resolve>` raises
    for a refused tap (already decided, expired, not an approver, a
    redelivered event). ``edited``: the arguments an approver edited
    (:mod:`tapgate.decisions.edits`), approved instead of the agent's.
    """
    now = gate.clock.now()
    if reason is not None:
        reason = reason.replace("\x00", "\ufffd")  # PostgreSQL cannot store NUL (see transition)
    change = Change(
        request_id=request_id,
        to="approved",
        by=by,
        now=now,
        reason=reason,
        scope=scope,
        grant=grant_maker("approve", by=by, scope=scope, now=now, ttl=grant_ttl, uses=grant_uses),
        approver_check=True,
        detail=detail or {},
        event=event,
        edited=edited,
    )
    transition = await gate.store.approvals.approve(change)
    if transition.outcome == "duplicate":
        raise DuplicateEvent(request_id, event[1] if event else "?")
    outcome = transition.outcome
    if outcome in ("partial", "counted", "self_approval"):
        assert transition.request is not None  # these outcomes carry what the transaction saw
        return Progress(kind=outcome, request=transition.request)
    return gate.apply(request_id, transition, by)
