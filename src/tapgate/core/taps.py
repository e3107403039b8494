"""A tap on an approval button, from any platform, turned into a decision and a reply.

The LINE and Slack webhooks verify the platform's signature and parse the
payload; what a tap *means* is decided here, once: who tapped (the platform
user id must belong to a configured approver, and that approver must be one
of *this* request's approvers), what they asked for, and what to tell them.
Every refusal is audited by the gate and changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from tapgate.core.actions import TapAction
from tapgate.core.gate import Gate
from tapgate.core.models import Request
from tapgate.errors import (
    AlreadyResolved,
    DuplicateEvent,
    NotAnApprover,
    RequestExpired,
    RequestNotFound,
)

__all__ = ["TapOutcome", "already_message", "applied_message", "clock_time", "short", "tap"]

TapKind = Literal["applied", "already", "expired", "not_approver", "not_found", "duplicate"]

_PAST = {"approved": "approved", "denied": "denied", "cancelled": "cancelled", "expired": "expired"}


@dataclass(frozen=True, kw_only=True, slots=True)
class TapOutcome:
    """What a tap did, and the sentence to show the person who tapped."""

    kind: TapKind
    message: str
    approver: str | None = None
    request: Request | None = None

    @property
    def applied(self) -> bool:
        """True when this tap decided the request."""
        return self.kind == "applied"


async def tap(
    gate: Gate,
    *,
    channel: str,
    user_id: str,
    action: TapAction,
    request_id: str,
    team: str | None = None,
    reason: str | None = None,
    event: str | None = None,
) -> TapOutcome:
    """Resolve ``request_id`` as the approver behind ``(channel, user_id)`` asks.

    An unknown user id is tried as ``channel:user_id`` so the refusal is
    audited like any other; an agent's token never reaches this function.
    ``event`` is the platform's event id: a redelivery of a handled event is
    a ``duplicate`` outcome with nothing done and nothing to say.
    """
    approver = gate.directory.identify(channel, user_id, team)
    actor = approver or f"{channel}:{user_id}"
    verdict: Literal["approve", "deny"] = "deny" if action == "deny" else "approve"
    try:
        request = await gate.resolve(
            request_id,
            verdict,
            by=actor,
            reason=reason,
            scope="session" if action == "approve_session" else "once",
            detail={"channel": channel, "user_id": user_id},
            event=(channel, event) if event is not None else None,
        )
    except DuplicateEvent:
        return TapOutcome(kind="duplicate", approver=approver, message="")
    except NotAnApprover:
        return TapOutcome(
            kind="not_approver",
            approver=approver,
            message="You are not an approver for this request.",
        )
    except RequestNotFound:
        return TapOutcome(
            kind="not_found", approver=approver, message="This request does not exist (any more)."
        )
    except RequestExpired:
        current = await gate.status(request_id)
        return TapOutcome(
            kind="expired",
            approver=approver,
            request=current,
            message=f"This request expired - {current.tool} ({short(current.id)}).",
        )
    except AlreadyResolved as exc:
        current = await gate.status(request_id)
        return TapOutcome(
            kind="already",
            approver=approver,
            request=current,
            message=already_message(current, exc.status),
        )
    return TapOutcome(
        kind="applied", approver=approver, request=request, message=applied_message(request)
    )


def short(request_id: str) -> str:
    """The id as messages show it: enough to recognise, short enough to read."""
    return f"request {request_id[:8]}"


def clock_time(at: datetime | None) -> str:
    """``12:03 UTC``."""
    return f"{at:%H:%M} UTC" if at is not None else "an unknown time"


def applied_message(request: Request) -> str:
    """ "Approved - deploy_prod (request 3fA9xxxx)"."""
    verb = "Approved" if request.status == "approved" else "Denied"
    scope = " for this session" if request.scope == "session" else ""
    return f"{verb}{scope} - {request.tool} ({short(request.id)})"


def already_message(request: Request, status: str) -> str:
    """ "Already approved by alice at 12:03" for a tap that came second."""
    if status == "expired":
        return f"This request expired - {request.tool} ({short(request.id)})."
    past = _PAST.get(status, status)
    by = f" by {request.resolved_by}" if request.resolved_by else ""
    return f"Already {past}{by} at {clock_time(request.resolved_at)} - {request.tool}."
