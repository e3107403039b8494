"""A decided tap's one log line, at the level the operator chose, and its latency metric.

Both webhooks (LINE and Slack) say what a tap decided in exactly one line,
logged at ``channels.tap_log`` (``off``, ``debug``, ``info`` or ``warning``;
see docs/configuration.md). The decision itself is in the database and its
audit chain, so the line is for the operator's eyes only: under a burst of
taps it was a sixth of a tap's CPU (a ``LogRecord``, a formatted time, a
write), which an operator who does not read it can switch off. A tap
refused as a redelivery (``duplicate``) is not logged at all: it decided
nothing. Logged under the webhook's own logger name, as before.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from tapgate.decisions.presses import Pressed
from tapgate.decisions.questions import TypedAnswer
from tapgate.decisions.taps import TapOutcome

__all__ = ["TAP_LOG_LEVELS", "TapLog"]

TAP_LOG_LEVELS: dict[str, int | None] = {
    "off": None,
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
}
"""``channels.tap_log``'s values and the ``logging`` level each means (``None``: no line)."""


class TapLog:
    """Tells the operator (and the tap latency histogram) what one webhook's taps decided."""

    def __init__(
        self,
        logger: logging.Logger,
        platform: str,
        *,
        level: int | None = logging.INFO,
        on_decision: Callable[[float], None] | None = None,
    ) -> None:
        self._log = logger
        self._platform = platform
        self._level = level
        self._on_decision = on_decision

    def decided(
        self,
        action: str,
        who: str | None,
        request_id: str,
        outcome: TapOutcome,
        started: float | None,
    ) -> None:
        """One line for ``outcome`` (unless off, or a duplicate); time it if it applied.

        ``started`` is when the tap's webhook call was verified (``None`` for
        a replay from the inbox: its latency would measure the outage).
        """
        if outcome.kind == "duplicate":
            return
        if self._level is not None and self._log.isEnabledFor(self._level):
            self._log.log(
                self._level,
                "%s tap %s by %s on request %s: %s",
                self._platform,
                action,
                outcome.approver or who,
                request_id,
                outcome.kind,
            )
        if outcome.applied and self._on_decision is not None and started is not None:
            self._on_decision(time.perf_counter() - started)

    def pressed(self, pressed: Pressed, who: str, event: str, started: float | None) -> None:
        """A decision button's line (:meth:`decided`), or one for a button no card sends.

        A redelivery of an unknown button says nothing, as a duplicate tap does.
        """
        if pressed.action is not None:
            self.decided(pressed.action, who, pressed.target, pressed.outcome, started)
        elif pressed.outcome.kind == "unknown_button":
            self._log.info("%s press %s carries unknown data; refused", self._platform, event)

    def answered(self, typed: TypedAnswer, who: str, started: float | None) -> None:
        """A typed answer's line, when it reached the gate (a refusal before it logs none)."""
        if typed.outcome is not None:
            self.decided("reply", who, typed.request_id, typed.outcome, started)
