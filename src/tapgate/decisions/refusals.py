"""Refused taps: audited every one, answered with the words of :mod:`tapgate.decisions.texts`.

The gate refuses (and the store audits, inside the transaction) what it
decides: :func:`refusal` turns its errors into the tapper's outcome, with the
request as the refusing transaction saw it, never a second read. What is
refused before any compare-and-set (another Slack workspace, ``reply`` on a
tool call, a tapper who is nobody's approver) is audited here by
:func:`audit_refused`, as the store audits its own, so every refusal leaves
the same line in the audit log whoever decided it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tapgate.decisions.tap_records import BatchTap, Tap, TapOutcome, Tapper, audit_detail, identify
from tapgate.decisions.texts import (
    NOT_APPROVER,
    NOT_FOUND,
    NOT_QUESTION,
    already_message,
    is_question,
)
from tapgate.errors import (
    AlreadyResolved,
    DuplicateEvent,
    NotAnApprover,
    RequestExpired,
    RequestNotFound,
)
from tapgate.gate.gate import Gate
from tapgate.gate.models import Request

__all__ = ["audit_refused", "not_a_question", "record_refusal", "refusal", "refuse"]


async def refuse(
    gate: Gate, answer: Tap | BatchTap, *, why: str, event: str | None = None
) -> TapOutcome:
    """Refuse a tap for a reason only the surface can see (another Slack workspace).

    Audited with ``why``; the tapper is told they are not an approver, which
    is what such a tap amounts to. With ``event``, the event id is remembered
    first, so a replayed or redelivered refusal is a silent ``duplicate``.
    """
    tapper = identify(gate, answer)
    if event is not None and not await gate.remember_event(answer.channel, event):
        return TapOutcome(kind="duplicate", approver=tapper.approver, message="")
    await audit_refused(tapper, why=why)
    return TapOutcome(kind="not_approver", approver=tapper.approver, message=NOT_APPROVER)


def refusal(approver: str | None, error: Exception) -> TapOutcome:
    """The outcome of a tap the gate refused (and audited), with its sentence."""
    if isinstance(error, DuplicateEvent):
        return TapOutcome(kind="duplicate", approver=approver, message="")
    if isinstance(error, NotAnApprover):
        return TapOutcome(kind="not_approver", approver=approver, message=NOT_APPROVER)
    if isinstance(error, RequestNotFound):
        return TapOutcome(kind="not_found", approver=approver, message=NOT_FOUND)
    assert isinstance(error, RequestExpired | AlreadyResolved)
    current = error.request
    assert isinstance(current, Request)  # the gate always hands over what the transaction saw
    status = "expired" if isinstance(error, RequestExpired) else current.status
    return TapOutcome(
        kind="expired" if status == "expired" else "already",
        approver=approver,
        request=current,
        message=already_message(current, status),
    )


async def not_a_question(tapper: Tapper, *, event: str | None) -> TapOutcome | None:
    """Refuse ``reply`` / ``dismiss`` on a tool call: audited, the event remembered.

    ``None`` lets the resolve go ahead (a question, or a missing request,
    which the resolve itself answers). The tool of a request never changes,
    so reading it before the compare-and-set is race-free.
    """
    gate = tapper.gate
    assert isinstance(tapper.tap, Tap)
    try:
        request = await gate.get_request(tapper.tap.request_id)
    except RequestNotFound:
        return None
    if is_question(request):
        return None
    if event is not None and not await gate.remember_event(tapper.tap.channel, event):
        return TapOutcome(kind="duplicate", approver=tapper.approver, message="")
    await audit_refused(tapper, why="not a question")
    return TapOutcome(kind="not_question", approver=tapper.approver, message=NOT_QUESTION)


async def audit_refused(tapper: Tapper, *, why: str, request_id: str | None = None) -> None:
    """Audit a refusal decided here, as the store audits the ones it decides.

    A batch tap names the call it was refused on (``request_id``) and its batch.
    """
    answer = tapper.tap
    wanted = "denied" if answer.action in ("deny", "dismiss", "deny_all") else "approved"
    if isinstance(answer, BatchTap):
        target, extra = request_id or answer.batch_id, {"batch": answer.batch_id}
    else:
        target, extra = answer.request_id, {}
    await record_refusal(
        tapper.gate,
        target,
        actor=tapper.actor,
        detail={**audit_detail(tapper), **extra, "wanted": wanted, "why": why},
    )


async def record_refusal(
    gate: Gate, request_id: str, *, actor: str, detail: Mapping[str, Any]
) -> None:
    """Write a ``refused`` audit line for a refusal decided before the compare-and-set."""
    now = gate.clock.now()
    await gate.store.record(
        "refused", request_id=request_id, actor=actor, now=now, detail=dict(detail)
    )
