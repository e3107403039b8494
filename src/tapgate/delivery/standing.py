"""Where a request stands beyond its status: quorum progress, escalation, its owner.

One line for every renderer (Slack, LINE, console), so a card says the same
thing everywhere: "Needs 2 approvals: 1 of 2: alice approved", "Escalated:
bob added at 12:30 UTC (nobody answered within 30 min)", "carol owns this
agent and cannot approve it". The count comes from the request as the store
last counted it (:mod:`tapgate.store.approvals` keeps the mirror).
"""

from __future__ import annotations

from tapgate.decisions.texts import clock_time, progress
from tapgate.gate.models import Request

__all__ = ["standing"]


def standing(request: Request) -> str | None:
    """The note a card shows under its facts, or ``None`` when there is nothing to say."""
    parts = []
    if request.quorum > 1:
        parts.append(f"Needs {request.quorum} approvals: {progress(request)}")
    if request.escalated_at is not None and request.escalate_to:
        waited = max(1, round((request.escalated_at - request.created_at).total_seconds() / 60))
        added = ", ".join(request.escalate_to)
        parts.append(
            f"Escalated: {added} added at {clock_time(request.escalated_at)}"
            f" (nobody answered within {waited} min)"
        )
    if request.owner is not None:
        parts.append(f"{request.owner} owns this agent and cannot approve it")
    return ". ".join(parts) or None
