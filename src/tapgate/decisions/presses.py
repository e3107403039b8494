"""A decision's button pressed in a chat: read its data once, decide it once, for every channel.

LINE's postback ``data``, Telegram's ``callback_data`` and a Teams card's
submitted data carry the same wire format (:mod:`tapgate.decisions.buttons`),
and what a press of one means does not depend on the platform. The channel
reads the buttons that decide nothing first (Open inbox, a grant's Revoke,
Deny… and Reply asking for text) and hands the rest here; it then only
renders what came of it::

    a batch card's own button ──decisions.taps.tap_batch──► Pressed(action, batch id, outcome)
    a request's button ──────────decisions.taps.tap────────► Pressed(action, request id, outcome)
    anything else ──claimed once──► Pressed(action None, outcome ``unknown_button``
                                    with "no longer valid", or ``duplicate``: say nothing)

An unknown button is claimed under its event id like a decision, so a
redelivery of it is told nothing twice and its inbox row is settled.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tapgate.decisions.buttons import (
    BatchAction,
    TapAction,
    parse_batch_postback_data,
    parse_postback_data,
)
from tapgate.decisions.taps import BatchTap, Tap, TapKind, TapOutcome, tap, tap_batch
from tapgate.decisions.texts import NO_LONGER_VALID
from tapgate.gate.gate import Gate

__all__ = ["Pressed", "ReasonFor", "press"]

ReasonFor = Callable[[TapAction | BatchAction], str | None]
"""The reason a press carries for its action (a card's text box), read once the action is known."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Pressed:
    """What a decision's button did: its action and target (a request or batch id), and the outcome.

    ``action`` is ``None`` (and ``target`` empty) when the data names no
    decision: ``outcome`` is then ``unknown_button``, or ``duplicate`` for a
    redelivery of one.
    """

    outcome: TapOutcome
    action: TapAction | BatchAction | None = None
    target: str = ""

    @property
    def said(self) -> str | None:
        """What to tell the presser: the outcome's sentence, nothing for a redelivery."""
        return None if self.outcome.kind == "duplicate" else self.outcome.message


async def press(
    gate: Gate,
    *,
    channel: str,
    user_id: str,
    data: object,
    event: str,
    reason: ReasonFor | None = None,
) -> Pressed:
    """Decide the press of the button whose data is ``data``, by ``user_id`` on ``channel``.

    ``event`` is the platform's event id (a redelivery is a ``duplicate``);
    ``reason`` gives the reason for the action pressed (``None``: none).
    A ``reply`` needs its answer as that reason: the caller that offers a
    Reply checks it first (``ValueError`` otherwise, as
    :func:`~tapgate.decisions.taps.tap`).
    """
    parsed = parse_postback_data(data)
    batch = parse_batch_postback_data(data) if parsed is None else None
    if batch is not None:  # a batch card's Approve all / Deny all / Allow all
        action, batch_id = batch
        whole = BatchTap(channel=channel, user_id=user_id, action=action, batch_id=batch_id)
        said = reason(action) if reason is not None else None
        outcome = await tap_batch(gate, whole, reason=said, event=event)
        return Pressed(action=action, target=batch_id, outcome=outcome)
    if parsed is None:
        fresh = await gate.remember_event(channel, event)
        kind: TapKind = "unknown_button" if fresh else "duplicate"
        return Pressed(outcome=TapOutcome(kind=kind, message=NO_LONGER_VALID if fresh else ""))
    action_, request_id = parsed
    answer = Tap(channel=channel, user_id=user_id, action=action_, request_id=request_id)
    said = reason(action_) if reason is not None else None
    outcome = await tap(gate, answer, reason=said, event=event)
    return Pressed(action=action_, target=request_id, outcome=outcome)
