"""What a batch card shows, independent of the platform: each call's own view, and its outcome.

A batch is a set of requests (decision 0011-a-batch-is-a-set-of-requests), so its card is a list
of the single requests' :class:`~tapgate.delivery.presentation.ApprovalView`
(masked and made visible exactly as a single card's), plus, for each call
decided already, the same outcome line a single card shows ("✅ Approved by
alice at 12:03 UTC"). The renderers (``batch_blocks``, ``batch_flex``,
``console``) own only layout and platform limits.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from tapgate.decisions.buttons import SHORT_ID_LENGTH
from tapgate.delivery.presentation import ApprovalView, outcome_text, present
from tapgate.gate.models import Request
from tapgate.policy.masking import clean

__all__ = ["BatchCall", "BatchView", "present_batch"]


@dataclass(frozen=True, kw_only=True, slots=True)
class BatchCall:
    """One call of the card: its view, and once decided the outcome line and reason (unescaped)."""

    view: ApprovalView
    outcome: str | None = None
    reason: str | None = None

    @property
    def is_open(self) -> bool:
        """Still waiting for a decision: the card shows its buttons."""
        return self.outcome is None


@dataclass(frozen=True, kw_only=True, slots=True)
class BatchView:
    """A batch card: whose calls, which batch, and the calls in the agent's order."""

    batch_id: str
    short_id: str
    agent: str
    session: str | None
    approvers: tuple[str, ...]
    expires_text: str
    time_left: str | None
    calls: tuple[BatchCall, ...]

    @property
    def open_calls(self) -> tuple[BatchCall, ...]:
        """The calls still waiting: what "Approve all" / "Deny all" would decide."""
        return tuple(c for c in self.calls if c.is_open)

    @property
    def can_allow_session(self) -> bool:
        """Whether "Allow all for session" means anything: an open call that can be granted."""
        return any(c.view.can_allow_session for c in self.open_calls)


def present_batch(
    requests: Sequence[Request],
    *,
    tool_shell_args: Mapping[str, str] | None = None,
    now: datetime | None = None,
) -> BatchView:
    """The :class:`BatchView` of a batch's calls (at least one, all of the same batch)."""
    if not requests:
        raise ValueError("a batch card needs at least one call")
    shell = dict(tool_shell_args or {})
    calls = tuple(
        BatchCall(
            view=_view(r, shell.get(r.tool), now),
            outcome=_outcome(r),
            reason=clean(r.resolution_reason) if r.resolution_reason else None,
        )
        for r in requests
    )
    first = calls[0].view
    batch_id = requests[0].batch_id or requests[0].id
    approvers = tuple(dict.fromkeys(a for r in requests for a in r.approvers))
    soonest = min(calls, key=lambda c: c.view.expires_at).view
    return BatchView(
        batch_id=batch_id,
        short_id=batch_id[:SHORT_ID_LENGTH],
        agent=first.agent,
        session=first.session,
        approvers=approvers,
        expires_text=soonest.expires_text,
        time_left=soonest.time_left,
        calls=calls,
    )


_VIEWS: OrderedDict[tuple[object, ...], ApprovalView] = OrderedDict()
_VIEWS_MAX = 512
"""Views kept: the cards of a few full batches (50 calls) in flight, each a few KB."""


def _view(request: Request, shell_arg: str | None, now: datetime | None) -> ApprovalView:
    """``present(request)``, masked once per request rather than once per card drawn.

    A 20-call batch's card is drawn for every approver × channel and again
    after each decision wave: masking and classifying its arguments was
    6 ms of event-loop time per drawing (docs/benchmarks.md). With no
    ``now`` the view depends only on the fields in the key (the arguments
    through ``args_digest``), none of which a decision changes, and on the
    status, which is set afresh on the cached view.
    """
    if now is not None:
        return present(request, tool_shell_arg=shell_arg, now=now)
    r = request
    key: tuple[object, ...] = (
        r.id,
        r.args_digest,
        shell_arg,
        r.agent,
        r.session,
        r.tool,
        r.risk,
        r.rule,
    )
    key += (r.reason, r.approvers, r.expires_at, r.grantable)
    view = _VIEWS.get(key)
    if view is None:
        view = _VIEWS[key] = present(request, tool_shell_arg=shell_arg)
        if len(_VIEWS) > _VIEWS_MAX:
            _VIEWS.popitem(last=False)
    else:
        _VIEWS.move_to_end(key)
    return view if view.status == request.status else replace(view, status=request.status)


def _outcome(request: Request) -> str | None:
    if request.status == "pending":
        return None
    by = clean(request.resolved_by) if request.resolved_by else None
    at = request.resolved_at or request.expires_at
    return outcome_text(request.status, by=by, at=at, scope=request.scope)
