"""What a tap on a batch card's own buttons means: every open call, each on its own terms.

A batch card's "Approve all", "Deny all" and "Allow all for session" are a
:class:`~tapgate.decisions.tap_records.BatchTap`: :func:`tap_batch` decides every
still-pending call of the batch in one transaction, each call authorised
against *its own* approvers and refused (and audited) on its own, so an
"Approve all" can never decide a call its tapper could not have tapped;
:func:`check_batch_tap` is :func:`~tapgate.decisions.taps.check` for a batch,
before the deny-reason dialog. Both are imported from :mod:`tapgate.decisions.taps`
by the surfaces, like every other tap.
"""

from __future__ import annotations

from functools import partial

from tapgate.decisions.refusals import audit_refused
from tapgate.decisions.remember import reach_for
from tapgate.decisions.tap_records import BatchTap, TapKind, TapOutcome, audit_detail, identify
from tapgate.decisions.texts import BATCH_NOT_FOUND, NOT_APPROVER_BATCH, batch_message
from tapgate.errors import DuplicateEvent, RequestNotFound
from tapgate.gate.batching import read_batch, resolve_batch
from tapgate.gate.gate import Gate
from tapgate.gate.models import Request, Scope
from tapgate.policy.engine import Policy
from tapgate.store import Transition

__all__ = ["check_batch_tap", "tap_batch"]


async def tap_batch(
    gate: Gate, answer: BatchTap, *, reason: str | None = None, event: str | None = None
) -> TapOutcome:
    """Decide every still-pending call of the batch as the approver behind ``answer`` asks.

    One transaction, one compare-and-set per pending call (decision
    0011-a-batch-is-a-set-of-requests); each checks the tapper against that call's approvers, so
    a stranger's "Approve all" changes nothing and is audited per call.
    Calls decided meanwhile stay decided and the sentence says so.
    """
    tapper = identify(gate, answer)
    scope: Scope = "session" if answer.action == "approve_all_session" else "once"
    try:
        transitions = await resolve_batch(
            gate,
            answer.batch_id,
            "deny" if answer.action == "deny_all" else "approve",
            by=tapper.actor,
            scope=scope,
            reason=reason,
            detail=audit_detail(tapper),
            event=(answer.channel, event) if event is not None else None,
            may_remember=partial(_may_remember, gate.policy),
        )
    except DuplicateEvent:
        return TapOutcome(kind="duplicate", approver=tapper.approver, message="")
    except RequestNotFound:
        return TapOutcome(kind="not_found", approver=tapper.approver, message=BATCH_NOT_FOUND)
    return _batch_outcome(tapper.approver, answer, transitions)


def _may_remember(policy: Policy, request: Request) -> bool:
    """Whether "Allow all for session" may remember this call, as its own card's button would."""
    return not reach_for(policy, request, "session").refused


def _batch_outcome(
    approver: str | None, answer: BatchTap, transitions: list[Transition]
) -> TapOutcome:
    """Sum up a batch tap: ``applied`` if it decided anything, else why not, in one sentence."""
    current = tuple(t.request for t in transitions if t.request is not None)
    applied = [t.request for t in transitions if t.outcome == "applied" and t.request]
    late = [t.request for t in transitions if t.outcome in ("final", "expired") and t.request]
    not_yours = sum(t.outcome == "unauthorized" for t in transitions)
    own = sum(t.outcome == "self_approval" for t in transitions)
    one_by_one = sum(t.outcome == "short_of_quorum" for t in transitions)
    if not applied and not late and not own and not one_by_one:
        message = NOT_APPROVER_BATCH if not_yours else BATCH_NOT_FOUND
        kind: TapKind = "not_approver" if not_yours else "not_found"
        return TapOutcome(kind=kind, approver=approver, message=message, requests=current)
    verb = {"approve_all": "approved", "deny_all": "denied"}.get(
        answer.action, "approved for this session"
    )
    message = batch_message(
        answer.batch_id,
        verb=verb,
        applied=applied,
        late=late,
        not_yours=not_yours,
        own=own,
        one_by_one=one_by_one,
    )
    # Nothing applied: "already" if a call was decided before, else why the open ones wait.
    kind = "applied" if applied else "already" if late else "self_approval" if own else "one_by_one"
    return TapOutcome(kind=kind, approver=approver, message=message, requests=current)


async def check_batch_tap(gate: Gate, answer: BatchTap) -> TapOutcome:
    """May ``answer``'s tapper decide any open call of the batch now? ``ready`` or why not.

    :func:`check` for a batch, run before the "Deny all" reason dialog opens;
    ``requests`` of a ``ready`` outcome are the open calls this tapper
    decides. A tapper who is an approver of none is audited once per open call.
    """
    tapper = identify(gate, answer)
    try:
        state = await read_batch(gate, answer.batch_id)
    except RequestNotFound:
        return TapOutcome(kind="not_found", approver=tapper.approver, message=BATCH_NOT_FOUND)
    members = [r for r in state.requests.values() if r.batch_id == answer.batch_id]
    now = gate.clock.now()
    still_open = [r for r in members if r.is_pending and r.expires_at > now]
    if not still_open:
        verb = "denied" if answer.action == "deny_all" else "approved"
        message = batch_message(answer.batch_id, verb=verb, applied=[], late=members)
        return TapOutcome(kind="already", approver=tapper.approver, message=message)
    mine = tuple(r for r in still_open if tapper.approver in r.approvers)
    if not mine:
        for request in still_open:
            await audit_refused(tapper, why="not an approver", request_id=request.id)
        return TapOutcome(kind="not_approver", approver=tapper.approver, message=NOT_APPROVER_BATCH)
    return TapOutcome(kind="ready", approver=tapper.approver, message="", requests=mine)
