"""Per-agent limits on asking: a runaway agent must not flood its approvers.

An agent over ``max_pending`` (requests waiting for a human at once) or
``asks_per_minute`` (new requests in the last 60 seconds) is refused with
:class:`~tapgate.errors.TooManyAsks` before anyone is pinged: the check runs
inside the transaction that would create the request, so the refused request
and its messages are rolled back together, on every replica alike (the
counts come from the database, not from one process's memory). Reusing an
identical pending request, a grant or an earlier decision is never refused:
none of them pings anyone.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["EDIT_MAX_BYTES", "NO_LIMITS", "AgentLimits"]


@dataclass(frozen=True, kw_only=True, slots=True)
class AgentLimits:
    """How much one agent may ask; ``None`` means no limit."""

    max_pending: int | None = None
    asks_per_minute: int | None = None


NO_LIMITS = AgentLimits()
"""What an agent without configured limits gets (the in-process gate's default)."""

EDIT_MAX_BYTES = 256 * 1024
"""The largest edited call (canonical JSON, UTF-8) an approver may approve (``core.edits``).

A person types an edit: a quarter of a mebibyte holds every field a chat
dialog can show, and keeps the audit line of the edit (proposal and edit,
masked) reasonable.
"""
