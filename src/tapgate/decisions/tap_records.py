"""Who tapped, on what, and what came of it: the records every tap module shares.

A surface builds a :class:`Tap` (one request) or a :class:`BatchTap` (a batch
card's own buttons) from the platform's ids after verifying its signature;
:func:`identify` names the approver behind those ids (a :class:`Tapper`), and
every step of :mod:`tapgate.decisions.taps` answers with a :class:`TapOutcome`.
Kept apart so that single taps (:mod:`tapgate.decisions.taps`), batch taps
(:mod:`tapgate.decisions.batch_taps`) and refusals (:mod:`tapgate.decisions.refusals`)
share one definition of each without importing one another.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from tapgate.decisions.buttons import BatchAction, TapAction
from tapgate.gate.gate import Gate
from tapgate.gate.models import Request

__all__ = [
    "BatchTap",
    "Tap",
    "TapKind",
    "TapOutcome",
    "Tapper",
    "audit_detail",
    "identify",
]

TapKind = Literal[
    "applied",
    "already",
    "expired",
    "not_approver",
    "not_found",
    "duplicate",
    "not_question",
    "not_remembered",
    "ambiguous",
    "ready",
    "partial",
    "counted",
    "self_approval",
    "edit_refused",
    "one_by_one",
    "unknown_button",
]


@dataclass(frozen=True, kw_only=True, slots=True)
class TapOutcome:
    """What a tap did, and the sentence to show the person who tapped.

    ``ready`` (from :func:`~tapgate.decisions.taps.check` and the question lookup only) means
    nothing
    happened yet and ``request`` may be acted on by this person. ``partial``: counted,
    the quorum waits for more; ``counted``: counted before; ``self_approval``:
    refused, the tapper owns the agent; ``edit_refused``: an edit the policy
    (or the edit's own checks, :mod:`tapgate.decisions.edits`) refuses, nothing decided;
    ``unknown_button``: the button's data names no decision (an old or forged card),
    refused (:mod:`tapgate.decisions.presses`).
    """

    kind: TapKind
    message: str
    approver: str | None = None
    request: Request | None = None
    requests: tuple[Request, ...] = ()
    """A batch tap's calls as it left them (``ready``: the open ones the tapper decides)."""

    @property
    def applied(self) -> bool:
        """True when this tap decided the request."""
        return self.kind == "applied"


@dataclass(frozen=True, kw_only=True, slots=True)
class _Tapped:
    """Who answered: the platform's ids as they arrived, not trusted yet.

    Surfaces build a :class:`Tap` or :class:`BatchTap` after verifying the
    platform's signature; the user id is matched against the directory here,
    and the tapper against the request's approvers inside the decision.
    ``team`` is the tapper's home Slack workspace, ``None`` elsewhere.
    """

    channel: str
    user_id: str
    team: str | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class Tap(_Tapped):
    """One answer on one request: approve, deny, allow for the session, reply..."""

    action: TapAction
    request_id: str


@dataclass(frozen=True, kw_only=True, slots=True)
class BatchTap(_Tapped):
    """One tap on a batch card's own buttons (approve all, deny all...)."""

    action: BatchAction
    batch_id: str


@dataclass(frozen=True, kw_only=True, slots=True)
class Tapper:
    """A :class:`Tap` (or :class:`BatchTap`) with the approver its ids name, if any."""

    gate: Gate
    tap: Tap | BatchTap
    approver: str | None

    @property
    def actor(self) -> str:
        """Who the audit names: the approver, or ``channel:user_id`` for a stranger."""
        return self.approver or f"{self.tap.channel}:{self.tap.user_id}"


def identify(gate: Gate, tap: Tap | BatchTap) -> Tapper:
    """The approver behind ``tap``'s ids (:meth:`~tapgate.gate.directory.Directory.identify`)."""
    approver = gate.directory.identify(tap.channel, tap.user_id, tap.team)
    return Tapper(gate=gate, tap=tap, approver=approver)


def audit_detail(tapper: Tapper) -> dict[str, str]:
    """Where a tap came from, as the audit records it."""
    detail = {"channel": tapper.tap.channel, "user_id": tapper.tap.user_id}
    if tapper.tap.team is not None:
        detail["team"] = tapper.tap.team
    return detail
